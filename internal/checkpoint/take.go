package checkpoint

import (
	"context"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// Take records a checkpoint of a sandbox now (kind wire.CheckpointManual by hand).
func (s *Service) Take(ctx context.Context, sandboxName string, req wire.CheckpointRequest, kind string) (wire.Checkpoint, error) {
	return wire.Checkpoint{}, apperr.Unavailable("", "checkpoints are not built yet")
}

// List returns a sandbox's checkpoints, the oldest first: with session, that session's
// (and those of no session).
func (s *Service) List(ctx context.Context, sandboxName, sessionName string) ([]wire.Checkpoint, error) {
	return nil, apperr.Unavailable("", "checkpoints are not built yet")
}

// Diff is what changed between two checkpoints of a sandbox (from, to as Resolve takes
// them; from empty: the checkpoint before to), as git diff prints it.
func (s *Service) Diff(ctx context.Context, sandboxName, sessionName, from, to string, stat bool) (string, error) {
	return "", apperr.Unavailable("", "checkpoints are not built yet")
}

// watch takes a checkpoint at the end of each agent's turn.
func (s *Service) watch(ctx context.Context) { <-ctx.Done() }
