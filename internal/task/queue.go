package task

import (
	"context"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// Land puts an attempt in the merge queue of its host repository and branch, or opens
// its pull request.
func (s *Service) Land(ctx context.Context, name string, req wire.LandRequest) (wire.QueueEntry, error) {
	return wire.QueueEntry{}, apperr.Invalid("", "landing is not built yet")
}

// Queue returns the merge queue's entries, oldest first; with task set, only its.
func (s *Service) Queue(ctx context.Context, task string) ([]wire.QueueEntry, error) {
	return s.opts.Store.QueueEntries(ctx, task)
}

// Drop takes an open entry out of the queue.
func (s *Service) Drop(ctx context.Context, id int64) (wire.QueueEntry, error) {
	return wire.QueueEntry{}, apperr.Invalid("", "landing is not built yet")
}

// turnEnded tells the queue an attempt's agent ended a turn (and its checks ran): an
// entry waiting on its answer to a conflict is tried again.
func (s *Service) turnEnded(ctx context.Context, name string, n int) {}

// runQueue works the merge queue's open entries, one at a time per repository and
// branch, until ctx ends.
func (s *Service) runQueue(ctx context.Context) { <-ctx.Done() }
