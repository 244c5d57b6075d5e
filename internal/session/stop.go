package session

import (
	"context"
	"fmt"
)

// Stop ends a session's agent (every process of its terminal session) and keeps the
// session, so that Restart brings it back on its conversation. running says whether its
// agent was running: a session whose agent had exited is left as it is.
func (s *Service) Stop(ctx context.Context, sandboxName, name string) (running bool, err error) {
	t, err := s.resolve(ctx, sandboxName, name)
	if err != nil {
		return false, err
	}
	l, err := readLive(ctx, t.client, name)
	if err != nil {
		return false, err
	}
	p, ok := l.panes[name]
	if !ok || p.dead {
		return false, nil
	}
	if out, code, err := run(ctx, t.client, "sh", "-c", endSession, "sh", Socket, name); err != nil || code != 0 {
		return true, fmt.Errorf("stop session %s of sandbox %s: exit %d: %v %s", name, sandboxName, code, err, tailOf(out))
	}
	return true, nil
}
