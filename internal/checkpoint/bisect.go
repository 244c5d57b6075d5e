package checkpoint

import (
	"context"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// Bisect finds the first turn of a session after which a check fails, running the
// check in a scratch copy of each checkpoint it tries (never in the workspace the
// agent works in), halving the range each time. progress hears each step.
func (s *Service) Bisect(ctx context.Context, sandboxName, sessionName string, req wire.BisectRequest, progress func(string)) (wire.BisectResult, error) {
	return wire.BisectResult{}, apperr.Unavailable("", "bisect is not built yet")
}
