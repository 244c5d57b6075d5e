package checkpoint

import (
	"context"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/guestclient"
)

// Rewind puts a session's sandbox's files and the session's conversation back to a
// checkpoint, after recording the state it leaves as a named checkpoint (its undo).
func (s *Service) Rewind(ctx context.Context, sandboxName, sessionName string, req wire.RewindRequest) (wire.RewindResult, error) {
	return wire.RewindResult{}, apperr.Unavailable("", "rewind is not built yet")
}

// restoreFiles puts the workspace of the sandbox c reaches back to checkpoint cp's
// files (and its HEAD and branch), writing only beneath /workspace, without following
// a symbolic link the sandbox made; ignored files stay as they are.
func restoreFiles(ctx context.Context, c *guestclient.Client, cp wire.Checkpoint) error {
	return apperr.Unavailable("", "rewind is not built yet")
}

// restoreConversation puts the transcript of cp's conversation back as it was at cp.
func restoreConversation(ctx context.Context, c *guestclient.Client, cp wire.Checkpoint) error {
	return apperr.Unavailable("", "rewind is not built yet")
}
