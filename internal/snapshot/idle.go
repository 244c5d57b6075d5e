package snapshot

import (
	"context"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestproto"
)

// Activity is when each sandbox was last used: a request that acts on it (an attach, an
// exec, a message, a file) or an event of its work. The idle stop reads it.
type Activity struct {
	mu   sync.Mutex
	last map[string]time.Time
	open map[string]int // requests still being served (an attach lasts hours)
}

// NewActivity returns an empty record.
func NewActivity() *Activity { return &Activity{last: map[string]time.Time{}, open: map[string]int{}} }

// Hold records a use that lasts (a request being served): the sandbox is in use until
// the returned release is called.
func (a *Activity) Hold(name string) (release func()) {
	a.mu.Lock()
	a.open[name]++
	a.last[name] = time.Now()
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.open[name]--; a.open[name] <= 0 {
			delete(a.open, name)
		}
		a.last[name] = time.Now()
	}
}

// Touch records that a sandbox is in use now.
func (a *Activity) Touch(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last[name] = time.Now()
}

// Since is how long a sandbox has gone unused; a sandbox not seen yet counts from start.
func (a *Activity) Since(name string, start time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open[name] > 0 {
		return 0
	}
	t, ok := a.last[name]
	if !ok || t.Before(start) {
		t = start
	}
	return time.Since(t)
}

// work are the events that say a sandbox is in use: its sessions and its branches moving.
// Heartbeats, port scans and paddock's own doings (snapshots, syncs) are not.
func work(ev events.Event) bool {
	switch ev.Kind {
	case guestproto.EventSessionStatus, guestproto.EventSessionExited, guestproto.EventBranchMoved,
		"session-started", "session-restarted", "session-renamed", "started", "created":
		return true
	}
	return false
}

// IdleStop stops each running sandbox unused (no request acting on it, no event of its
// work, no session working) for its own idle stop, or else for after (the config's; 0:
// never), after a final snapshot, until ctx is done. A sandbox whose final snapshot fails
// keeps running, and is tried again later.
func (s *Service) IdleStop(ctx context.Context, after time.Duration, activity *Activity) {
	start := time.Now()
	sub := s.sandboxes.Events().Subscribe(64, work)
	defer func() { sub.Close() }()
	// Looked at four times per idle time, at least every 30 s.
	period := func(d time.Duration) time.Duration { return max(min(d/4, 30*time.Second), time.Second) }
	every := 30 * time.Second
	if after > 0 {
		every = period(after)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Dropped():
			sub = s.sandboxes.Events().Subscribe(64, work)
		case ev, ok := <-sub.C():
			if ok && ev.Sandbox != "" {
				activity.Touch(ev.Sandbox)
			}
		case <-tick.C:
			// The records, not the backends: looking costs a query, not an engine call.
			list, err := s.sandboxes.Store().ListSandboxes(ctx)
			if err != nil {
				continue
			}
			next := 30 * time.Second
			if after > 0 {
				next = period(after)
			}
			for _, sb := range list {
				limit := after
				if sb.IdleStop > 0 {
					limit = sb.IdleStop
					next = min(next, period(limit))
				}
				if limit > 0 && sb.State == "running" && activity.Since(sb.Name, start) >= limit {
					s.stopIdle(ctx, sb.Name, limit, activity)
				}
			}
			if next != every {
				every = next
				tick.Reset(every)
			}
		}
	}
}

// stopIdle takes the final snapshot of an idle sandbox and stops it, unless a session
// is working (which is use, though it makes no request).
func (s *Service) stopIdle(ctx context.Context, name string, after time.Duration, activity *Activity) {
	if infos, err := s.sessions.List(ctx, name); err == nil {
		for _, in := range infos {
			if in.Status == "working" {
				activity.Touch(name)
				return
			}
		}
	}
	m, err := s.Take(ctx, name, TakeOptions{Note: "before idle stop"}, nil)
	if err != nil {
		s.log.Warn("idle stop: the final snapshot failed; the sandbox keeps running", "sandbox", name, "err", err)
		activity.Touch(name)
		return
	}
	if _, err := s.sandboxes.Stop(ctx, name); err != nil {
		s.log.Warn("idle stop", "sandbox", name, "err", err)
		activity.Touch(name)
		return
	}
	s.log.Info("stopped an idle sandbox", "sandbox", name, "idle_for", after, "snapshot", m.ID)
	if sb, err := s.sandboxes.Record(ctx, name); err == nil {
		s.sandboxes.Emit(ctx, sb, events.Event{Kind: "idle-stopped", Detail: "unused for " + after.String() + "; final snapshot " + m.ID,
			Attrs: map[string]string{"snapshot": m.ID}})
	}
}
