// Package events is the daemon's event bus: what happens to sandboxes, pushed to whoever
// listens (the API's event stream, the automatic syncs). Publishing never blocks: each
// subscriber has a buffered channel, and one that falls behind is dropped and told so,
// to resume from the store by sequence number. The daemon records every event in its
// state before publishing it, so the bus only ever carries events that have a seq.
package events

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event is one thing that happened, as the daemon records it and the API streams it.
type Event struct {
	// Seq orders events; it is the row of the daemon's events table, so a client
	// resumes after the last seq it saw.
	Seq  int64     `json:"seq,omitempty"`
	Time time.Time `json:"time,omitzero"`
	// Sandbox is the sandbox's name.
	Sandbox string `json:"sandbox,omitempty"`
	// Session is the session it concerns, if any.
	Session string `json:"session,omitempty"`
	// Kind says what happened: created, started, stopped, removed, session-started,
	// session-restarted, session-removed, session-status, session-exited, port-open,
	// port-closed, branch-moved, synced, sync-failed, egress-denied (docs/api.md).
	Kind string `json:"kind,omitempty"`
	// Detail is a one-line summary for people.
	Detail string `json:"detail,omitempty"`
	// Attrs are the kind's fields, for programs.
	Attrs map[string]string `json:"attrs,omitempty"`
}

// DefaultBuffer is how many events a subscriber may fall behind before it is dropped.
const DefaultBuffer = 1024

// Bus fans events out to subscribers. It is safe for concurrent use.
type Bus struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// NewBus returns a bus with no subscribers.
func NewBus() *Bus { return &Bus{subs: map[*Subscription]struct{}{}} }

// Subscription is one subscriber's view of the bus.
type Subscription struct {
	bus    *Bus
	ch     chan Event
	match  func(Event) bool
	once   sync.Once
	closed bool // under bus.mu
	// Dropped is closed when the subscriber fell behind and was dropped; C is closed too.
	dropped chan struct{}
}

// C delivers the subscription's events, in seq order. It is closed when the
// subscription is closed or dropped.
func (s *Subscription) C() <-chan Event { return s.ch }

// Dropped is closed when the subscriber fell behind (its buffer was full when an event
// came) and was dropped: it has missed events from then on, and should resume from the
// store after the last seq it received.
func (s *Subscription) Dropped() <-chan struct{} { return s.dropped }

// Close ends the subscription; C is closed. Closing twice is harmless.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	defer s.bus.mu.Unlock()
	s.closeLocked()
}

func (s *Subscription) closeLocked() {
	if s.closed {
		return
	}
	s.closed = true
	delete(s.bus.subs, s)
	close(s.ch)
}

// Subscribe returns a subscription to the events for which match returns true (nil
// matches all), with room for buffer events (0: DefaultBuffer).
func (b *Bus) Subscribe(buffer int, match func(Event) bool) *Subscription {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	s := &Subscription{bus: b, ch: make(chan Event, buffer), match: match, dropped: make(chan struct{})}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Publish hands ev to every matching subscriber. It never blocks: a subscriber whose
// buffer is full is dropped (Dropped is closed, then C).
func (b *Bus) Publish(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.match != nil && !s.match(ev) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			close(s.dropped)
			s.closeLocked()
		}
	}
}

// Point is a place in the event history: after a seq, or at a time.
type Point struct {
	// Seq, when not zero, means the events after this seq.
	Seq int64
	// Time, when not zero, means the events from this time on (or up to it, for an end).
	Time time.Time
}

// ParsePoint reads a place in the history as `paddock events` and GET /v1/events take
// it: a duration back from now ("90s", "1h", "2h30m"), a time (RFC 3339, or a date and
// time in the local zone: "2006-01-02 15:04:05", "2006-01-02"), or a seq (a plain
// number). allowSeq is false for an end, which must be a time.
func ParsePoint(s string, now time.Time, allowSeq bool) (Point, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Point{}, errors.New("empty")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if !allowSeq || n < 0 {
			return Point{}, fmt.Errorf("%q: give a duration (1h) or a time (2006-01-02T15:04:05Z)", s)
		}
		return Point{Seq: n}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return Point{}, fmt.Errorf("%q: a duration back from now cannot be negative", s)
		}
		return Point{Time: now.Add(-d)}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return Point{Time: t}, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return Point{Time: t}, nil
		}
	}
	what := "a duration (1h), a time (2006-01-02T15:04:05Z)"
	if allowSeq {
		what += " or a seq"
	}
	return Point{}, fmt.Errorf("%q is not %s", s, what)
}
