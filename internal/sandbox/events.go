package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/store"
)

// Events is the daemon's event bus: every event, once recorded (the event log's).
func (s *Service) Events() *events.Bus { return s.events.Bus() }

// Emit records and publishes an event of sandbox sb in the daemon's event log
// (eventlog.Log.Emit): the service's own, and those of the parts that hold it.
func (s *Service) Emit(ctx context.Context, sb store.Sandbox, ev events.Event) {
	s.events.Emit(ctx, sb, ev)
}

// agentKinds are the events a guest may report; anything else it sends is dropped.
var agentKinds = map[string]bool{
	guestproto.EventSessionStatus: true,
	guestproto.EventSessionExited: true,
	guestproto.EventPortOpen:      true,
	guestproto.EventPortClosed:    true,
	guestproto.EventBranchMoved:   true,
}

// Bounds on what a guest's event may carry, and how many it may send: whatever runs in
// a sandbox could speak for its guest, and must not fill the daemon's state.
const (
	maxAgentAttrs    = 16
	maxAgentAttrLen  = 512
	agentEventsBurst = 200
	agentEventsRate  = 50 // per second, once the burst is spent
)

// pump records and publishes what a sandbox's guest reports, for as long as the guest
// connection lives (ctx is cancelled when it is dropped). A subscription the guest ends
// (it fell behind) is made again.
func (s *Service) pump(ctx context.Context, sb store.Sandbox, c *guestclient.Client) {
	limit := newBucket(agentEventsBurst, agentEventsRate)
	warned := time.Time{}
	for delay := 100 * time.Millisecond; ; delay = min(delay*2, 5*time.Second) {
		ch, err := c.Events(ctx)
		if err == nil {
			for ev := range ch {
				if ev.GetKind() == guestproto.EventHeartbeat {
					continue
				}
				if !limit.take(time.Now()) {
					if time.Since(warned) > time.Minute {
						warned = time.Now()
						s.log.Warn("the sandbox's agent sends too many events: dropping some", "sandbox", sb.Name)
					}
					continue
				}
				s.fromAgent(ctx, sb, ev.GetKind(), ev.GetAttrs())
				delay = 100 * time.Millisecond
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-c.Done():
			return // keep reconnects, and a new connection has its own pump
		case <-time.After(delay):
		}
	}
}

// fromAgent checks a guest's event and records it, with what the daemon learns from it.
func (s *Service) fromAgent(ctx context.Context, sb store.Sandbox, kind string, raw map[string]string) {
	if kind == guestproto.EventControlChanged {
		s.controlChanged(sb, raw)
		return
	}
	if !agentKinds[kind] || len(raw) > maxAgentAttrs {
		return
	}
	attrs := make(map[string]string, len(raw))
	for k, v := range raw {
		if len(k) > 64 || len(v) > maxAgentAttrLen {
			return
		}
		attrs[k] = v
	}
	ev := events.Event{Kind: kind, Session: attrs["session"], Attrs: attrs}
	delete(attrs, "session")
	delete(attrs, "detail") // the event's own Detail says it
	ev.Detail = agentDetail(ev)
	if id := attrs["agent_session"]; kind == guestproto.EventSessionStatus && id != "" && ev.Session != "" {
		s.learnResumeID(ctx, sb, ev.Session, id)
	}
	if kind == guestproto.EventSessionExited && ev.Session != "" {
		// Its process ended while the sandbox ran: a start of the sandbox leaves it.
		if err := s.opts.Store.SetSessionEnded(ctx, sb.ID, ev.Session, true); err != nil {
			s.log.Warn("record a session's end", "sandbox", sb.Name, "session", ev.Session, "err", err)
		}
	}
	s.Emit(ctx, sb, ev)
}

// learnResumeID records the conversation id an agent's hook reported, for agents whose
// ids paddock does not choose (it keeps one it has).
func (s *Service) learnResumeID(ctx context.Context, sb store.Sandbox, session, id string) {
	se, err := s.opts.Store.GetSession(ctx, sb.ID, session)
	if err != nil || se.ResumeID != "" {
		return
	}
	if err := s.opts.Store.SetResumeID(ctx, sb.ID, session, id); err != nil {
		s.log.Warn("record a conversation id", "sandbox", sb.Name, "session", session, "err", err)
	}
}

// agentDetail is the one-line summary of a guest's event.
func agentDetail(ev events.Event) string {
	a := ev.Attrs
	switch ev.Kind {
	case guestproto.EventSessionStatus:
		return ev.Session + " is " + a["status"]
	case guestproto.EventSessionExited:
		if a["exit_status"] != "" {
			return ev.Session + " exited with status " + a["exit_status"]
		}
		return ev.Session + " exited"
	case guestproto.EventPortOpen, guestproto.EventPortClosed:
		state := "open"
		if ev.Kind == guestproto.EventPortClosed {
			state = "closed"
		}
		d := fmt.Sprintf("port %s %s", a["port"], state)
		if a["process"] != "" {
			d += fmt.Sprintf(" (%s, pid %s)", a["process"], a["pid"])
		}
		return d
	case guestproto.EventBranchMoved:
		switch {
		case a["from"] == "":
			return fmt.Sprintf("%s created at %s", a["branch"], short(a["to"]))
		case a["to"] == "":
			return fmt.Sprintf("%s deleted (was %s)", a["branch"], short(a["from"]))
		}
		return fmt.Sprintf("%s %s..%s", a["branch"], short(a["from"]), short(a["to"]))
	}
	return ""
}

func short(commit string) string {
	if len(commit) > 10 {
		return commit[:10]
	}
	return commit
}

// bucket is a token bucket: burst events at once, then rate per second.
type bucket struct {
	tokens, burst, rate float64
	last                time.Time
}

func newBucket(burst, rate float64) *bucket { return &bucket{tokens: burst, burst: burst, rate: rate} }

func (b *bucket) take(now time.Time) bool {
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
