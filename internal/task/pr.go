package task

import (
	"context"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// openPR pushes an attempt's work (the commit the queue fetched into the host
// repository) to the remote as a branch of its own and opens a pull request for it.
func (s *Service) openPR(ctx context.Context, e wire.QueueEntry, t wire.Task, a wire.Attempt) (wire.PullRequest, error) {
	return wire.PullRequest{}, apperr.Invalid("", "pull requests are not built yet")
}

// followPR reads the state of an entry's pull request on the forge.
func (s *Service) followPR(ctx context.Context, e wire.QueueEntry) (wire.PullRequest, error) {
	return wire.PullRequest{}, apperr.Invalid("", "pull requests are not built yet")
}
