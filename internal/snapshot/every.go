package snapshot

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestproto"
)

// changes are the events that say a sandbox's work moved on: a branch moved, a session
// started, worked or finished (its conversation grew).
func changes(ev events.Event) bool {
	switch ev.Kind {
	case guestproto.EventBranchMoved, guestproto.EventSessionStatus, guestproto.EventSessionExited, "session-started", "session-restarted":
		return true
	}
	return false
}

// Every snapshots, every interval, each running sandbox whose work moved on since its
// last snapshot (as the guests' events tell), until ctx is done. A round still running
// when the next is due makes that one wait.
func (s *Service) Every(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	sub := s.sandboxes.Events().Subscribe(64, changes)
	defer func() { sub.Close() }()
	changed := map[string]bool{}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var busy atomic.Bool
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Dropped():
			// Fallen behind: every running sandbox may have changed.
			sub = s.sandboxes.Events().Subscribe(64, changes)
			if list, err := s.sandboxes.List(ctx); err == nil {
				for _, sb := range list {
					changed[sb.Name] = true
				}
			}
		case ev, ok := <-sub.C():
			if ok && ev.Sandbox != "" {
				changed[ev.Sandbox] = true
			}
		case <-tick.C:
			if len(changed) == 0 || !busy.CompareAndSwap(false, true) {
				continue
			}
			names := changed
			changed = map[string]bool{}
			go func() {
				defer busy.Store(false)
				for name := range names {
					s.scheduled(ctx, name, interval)
				}
			}()
		}
	}
}

// scheduled takes one scheduled snapshot, if the sandbox still runs.
func (s *Service) scheduled(ctx context.Context, name string, interval time.Duration) {
	sb, err := s.sandboxes.Record(ctx, name)
	if err != nil || sb.State != "running" {
		return
	}
	m, err := s.Take(ctx, name, TakeOptions{Note: "every " + interval.String()}, nil)
	if err != nil {
		s.log.Warn("scheduled snapshot", "sandbox", name, "err", err)
		return
	}
	s.log.Info("scheduled snapshot", "sandbox", name, "id", m.ID, "size", m.Size, "uploaded", m.Uploaded)
}
