package checkpoint

import (
	"context"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// Fork makes new sandboxes (req.Count, on req.Backend) with a sandbox's files and
// conversation at a checkpoint, each with an identity of its own. progress hears each
// step.
func (s *Service) Fork(ctx context.Context, sandboxName string, req wire.ForkRequest, progress func(string)) (wire.ForkResult, error) {
	return wire.ForkResult{}, apperr.Unavailable("", "fork is not built yet")
}
