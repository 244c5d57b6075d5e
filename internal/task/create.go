package task

import (
	"context"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// Create records a task and starts preparing it; progress, when set, is told each step
// of what Create itself waits for.
func (s *Service) Create(ctx context.Context, req wire.TaskCreateRequest, progress func(string)) (wire.Task, error) {
	return wire.Task{}, apperr.Invalid("", "tasks are not built yet")
}

// Review sends a comment to an attempt's agent as its next message.
func (s *Service) Review(ctx context.Context, name string, n int, req wire.ReviewRequest) (wire.Attempt, error) {
	return wire.Attempt{}, apperr.Invalid("", "tasks are not built yet")
}

// Remove removes a task's attempts' sandboxes, each after a final snapshot, then the task.
func (s *Service) Remove(ctx context.Context, name string, progress func(string)) error {
	return apperr.Invalid("", "tasks are not built yet")
}
