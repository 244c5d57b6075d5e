package checkpoint

import (
	"context"
	"strconv"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/store"
)

// pruned are the checkpoints of all (the oldest first) past the bounds: more than keep
// or, with maxBytes, storing more than maxBytes; the oldest unnamed ones go first, and
// named ones are never pruned. The newest checkpoint is always kept.
func pruned(all []wire.Checkpoint, keep int, maxBytes int64) []wire.Checkpoint {
	count, total := len(all), int64(0)
	for _, c := range all {
		total += c.Bytes
	}
	var out []wire.Checkpoint
	for i, c := range all {
		if count <= keep && (maxBytes <= 0 || total <= maxBytes) {
			break
		}
		if c.Name != "" || i == len(all)-1 {
			continue
		}
		out = append(out, c)
		count--
		total -= c.Bytes
	}
	return out
}

// prune deletes the checkpoints of sandbox sb past the service's bounds: their refs in
// the sandbox, then their records. Called under the sandbox's lock with its
// checkpoints, the oldest first.
func (s *Service) prune(ctx context.Context, sb store.Sandbox, c *guestclient.Client, all []wire.Checkpoint) {
	gone := pruned(all, s.opts.Keep, s.opts.MaxBytes)
	if len(gone) == 0 {
		return
	}
	argv := []string{"sh", "-c", pruneScript, "sh"}
	for _, cp := range gone {
		argv = append(argv, strconv.Itoa(cp.Seq))
	}
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: argv, Env: gitsync.SandboxGitEnv, Dir: inside.Workspace})
	if err != nil || code != 0 {
		s.log.Warn("prune checkpoints", "sandbox", sb.Name, "exit", code, "err", err)
		return
	}
	for _, cp := range gone {
		if err := s.opts.Store.DeleteCheckpoint(ctx, sb.ID, cp.Seq); err != nil {
			s.log.Warn("forget a pruned checkpoint", "sandbox", sb.Name, "seq", cp.Seq, "err", err)
		}
	}
}
