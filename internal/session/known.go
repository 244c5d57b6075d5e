package session

import (
	"context"
	"time"

	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestproto"
)

// listBounded is List of one sandbox, waiting for it no longer than its last read
// earned (lastread.Cache): past that, the sessions as last read, each marked Stale, while
// the read finishes in the background.
func (s *Service) listBounded(ctx context.Context, id, name string) ([]Info, error) {
	list, stale, at, err := s.known.Get(ctx, id, func(ctx context.Context) ([]Info, error) { return s.List(ctx, name) })
	if err != nil || !stale {
		return list, err
	}
	out := make([]Info, len(list))
	for i, in := range list {
		in.Stale = true
		in.Detail = "as of " + time.Since(at).Round(time.Second).String() + " ago: the sandbox is slow to answer"
		out[i] = in
	}
	return out, nil
}

// ForgetOnStatus drops a sandbox's sessions as last read whenever its agent reports a
// session's status or exit, until ctx ends: the next listing waits for a read that knows
// of it, instead of answering at once with the state before (on a loaded machine, ls
// showed a session still waiting for you after it had gone idle).
func (s *Service) ForgetOnStatus(ctx context.Context, bus *events.Bus) {
	events.Watch(ctx, bus, func(ev events.Event) bool {
		return ev.Kind == guestproto.EventSessionStatus || ev.Kind == guestproto.EventSessionExited
	}, nil, func(ev events.Event) {
		if sb, err := s.store.GetSandbox(ctx, ev.Sandbox); err == nil {
			s.known.Forget(sb.ID)
		}
	})
}
