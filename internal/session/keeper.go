package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/store"
)

// keeper is the session service as the sandbox service's SessionKeeper: a sandbox's
// stop records which sessions run, and its start resumes them.
type keeper struct{ s *Service }

var _ sandbox.SessionKeeper = keeper{}

// Stopping implements sandbox.SessionKeeper: each session whose process has ended (or
// is gone) is marked so, each whose process runs is marked to be resumed. A sandbox
// whose state cannot be read keeps what was recorded (its sessions' ends, as they came).
func (k keeper) Stopping(ctx context.Context, sb store.Sandbox) {
	defer k.s.known.Forget(sb.ID) // the next listing waits for what the stop leaves
	rows, err := k.s.store.ListSessions(ctx, sb.ID)
	if err != nil || len(rows) == 0 {
		return
	}
	c, err := k.s.sandboxes.Client(ctx, sb.Name)
	if err != nil {
		return
	}
	names := make([]string, len(rows))
	for i, se := range rows {
		names[i] = se.Name
	}
	l, err := readLive(ctx, c, names...)
	if err != nil {
		k.s.log.Warn("read the sessions of a sandbox that stops; start resumes those recorded", "sandbox", sb.Name, "err", err)
		return
	}
	for _, se := range rows {
		st, _ := statusOf(l, se.Name)
		if ended := st == "exited"; ended != se.Ended {
			if err := k.s.store.SetSessionEnded(ctx, sb.ID, se.Name, ended); err != nil {
				k.s.log.Warn("record a session's state as its sandbox stops", "sandbox", sb.Name, "session", se.Name, "err", err)
			}
		}
	}
}

// Started implements sandbox.SessionKeeper: every session not marked ended is restarted
// on its conversation (its agent's resume id). One whose process still runs (a VM
// resumed from suspension brings its processes back) is left as it is.
func (k keeper) Started(ctx context.Context, sb store.Sandbox) ([]string, error) {
	defer k.s.known.Forget(sb.ID)
	rows, err := k.s.store.ListSessions(ctx, sb.ID)
	if err != nil {
		return nil, err
	}
	var resumed []string
	var errs []error
	for _, se := range rows {
		if se.Ended {
			continue
		}
		_, err := k.s.Restart(ctx, sb.Name, se.Name)
		switch {
		case err == nil:
			resumed = append(resumed, se.Name)
		case apperr.KindOf(err) == apperr.KindConflict:
			// Still running.
		default:
			errs = append(errs, fmt.Errorf("session %s was not resumed (`paddock restart %s/%s` tries again): %w", se.Name, sb.Name, se.Name, err))
		}
	}
	return resumed, errors.Join(errs...)
}
