package session

import (
	"context"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/alarm"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/transcript"
)

// scanned is how far each session's transcript was read for alarms, by sandbox id and
// session name: entries before it were read.
type scanned struct {
	mu sync.Mutex
	n  map[string]int
}

// scanTranscript reads the entries of a session's transcript that were not read before
// for tool calls that go for the agent's controls (alarm.ToolEntry), and raises an alarm
// for each. Entries from before the sandbox's alarms were last cleared raise none (a
// daemon that starts again reads every transcript from its start).
func (s *Service) scanTranscript(ctx context.Context, sb store.Sandbox, se store.Session, entries []transcript.Entry) {
	key := sb.ID + "/" + se.Name
	s.scan.mu.Lock()
	if s.scan.n == nil {
		s.scan.n = map[string]int{}
	}
	from := s.scan.n[key]
	if from > len(entries) {
		from = 0 // a new conversation of the session
	}
	s.scan.n[key] = len(entries)
	s.scan.mu.Unlock()
	var found []alarm.Finding
	var after time.Time
	afterKnown := from != 0
	for _, e := range entries[from:] {
		for _, f := range alarm.ToolEntry(e) {
			if !afterKnown {
				after, afterKnown = s.lastCleared(ctx, sb), true
			}
			if !e.Time.IsZero() && !e.Time.After(after) {
				continue
			}
			found = append(found, f)
		}
	}
	if len(found) == 0 {
		return
	}
	// Raised on their own: a listing that read the transcript does not wait on them (nor
	// on the stop that [alarms] stop makes of one).
	go func() {
		for _, f := range found {
			s.sandboxes.Raise(context.WithoutCancel(ctx), sb.Name, se.Name, f)
		}
	}()
}

// lastCleared is when the user last cleared an alarm of the sandbox (zero: never).
func (s *Service) lastCleared(ctx context.Context, sb store.Sandbox) time.Time {
	rows, err := s.store.Alarms(ctx, sb.ID, true)
	if err != nil {
		return time.Time{}
	}
	var last time.Time
	for _, r := range rows {
		if r.Cleared.After(last) {
			last = r.Cleared
		}
	}
	return last
}

// WatchTranscripts reads a session's transcript for alarms at each end of its agent's
// turn (its status idle or waiting) and when it exits, until ctx ends: an agent's tool
// calls raise their alarms even when nobody looks at the session.
func (s *Service) WatchTranscripts(ctx context.Context, bus *events.Bus) {
	events.Watch(ctx, bus, func(ev events.Event) bool {
		return ev.Session != "" && (ev.Kind == guestproto.EventSessionExited ||
			ev.Kind == guestproto.EventSessionStatus && (ev.Attrs["status"] == "idle" || ev.Attrs["status"] == "waiting"))
	}, nil, func(ev events.Event) {
		t, err := s.resolve(ctx, ev.Sandbox, ev.Session)
		if err != nil {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, _, err := s.readTranscript(rctx, t.client, t.sb, t.se, false); err != nil {
			s.log.Debug("read a transcript for alarms", "sandbox", ev.Sandbox, "session", ev.Session, "err", err)
		}
	})
}
