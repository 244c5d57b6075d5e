package task

import "context"

// watch follows the event bus: an attempt's agent ending its turn, or a new commit on
// its branch, runs the checks.
func (s *Service) watch(ctx context.Context) { <-ctx.Done() }

// resume takes up the work a restart cut short.
func (s *Service) resume(ctx context.Context) {}
