package checkpoint

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
)

// finishRewinds, when the daemon starts, finishes the rewinds a killed daemon cut off
// after they had taken their undo point: the file step ran to its end in the sandbox,
// but the conversation and the agent's start again were the daemon's to do, and until
// they are done the files are at the checkpoint and the conversation is not. A sandbox
// is looked at only when its newest checkpoint is a rewind's undo point (the only one a
// rewind under way can have left), and the rewind is finished only when the sandbox's
// mark says that rewind was under way: the same rewind is run again, which keeps its
// undo point. A rewind cut off before its undo point moved no file; its agent, stopped,
// shows exited and `paddock restart` brings it back.
func (s *Service) finishRewinds(ctx context.Context) {
	sbs, err := s.opts.Store.ListSandboxes(ctx)
	if err != nil {
		s.log.Warn("look for rewinds cut off", "err", err)
		return
	}
	for _, sb := range sbs {
		all, err := s.opts.Store.ListCheckpoints(ctx, sb.ID, "")
		if err != nil || len(all) == 0 {
			continue
		}
		undo := all[len(all)-1]
		if undo.Kind != wire.CheckpointRewind || undo.Session == "" || undo.RewoundTo == 0 {
			continue
		}
		s.work.Go(func() { s.finishRewind(ctx, sb.Name, undo) })
	}
}

// finishRewind finishes the rewind whose undo point is undo, if the sandbox's mark says
// it was cut off. A daemon that has just started may not reach the sandbox yet (its
// guest connection is made again): it tries for reachWait.
func (s *Service) finishRewind(ctx context.Context, sandboxName string, undo wire.Checkpoint) {
	var c *guestclient.Client
	for deadline := time.Now().Add(reachWait); ; {
		var err error
		if c, err = s.opts.Sandboxes.Client(ctx, sandboxName); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return // a sandbox that is not running: its rewind is finished by running it again
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	if p, ok := readMark(ctx, c); !ok || p.undo != undo.Seq {
		return
	}
	s.log.Info("finishing a rewind cut off by the daemon's end", "sandbox", sandboxName, "session", undo.Session, "to", undo.RewoundTo)
	if _, err := s.Rewind(ctx, sandboxName, undo.Session, wire.RewindRequest{To: fmt.Sprintf("#%d", undo.RewoundTo)}); err != nil {
		s.log.Warn("finish a rewind cut off", "sandbox", sandboxName, "session", undo.Session, "err", err)
	}
}

// reachWait is how long a daemon that has just started tries to reach a sandbox whose
// rewind it may have to finish.
const reachWait = time.Minute

// readMark reads the mark of a rewind under way in the sandbox c reaches, if there is one.
func readMark(ctx context.Context, c *guestclient.Client) (pendingRewind, bool) {
	var p pendingRewind
	out, _, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", `m=$(git rev-parse --git-path paddock/rewind) && [ -f "$m" ] && head -c 200 "$m"`},
		Env: gitEnv, Dir: inside.Workspace}, 4096)
	if err != nil || code != 0 {
		return p, false
	}
	f := strings.Fields(out)
	if len(f) < 2 {
		return p, false
	}
	p.commit = f[0]
	if _, err := fmt.Sscan(f[1], &p.undo); err != nil {
		return p, false
	}
	return p, true
}
