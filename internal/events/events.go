// Package events is the daemon's event bus: what happens to sandboxes, pushed to whoever
// listens (the API's event stream, the automatic syncs). Publishing never blocks: each
// subscriber has a buffered channel, and one that falls behind is dropped and told so,
// to resume from the store by sequence number. The daemon records every event in its
// state before publishing it, so the bus only ever carries events that have a seq.
package events

import (
	"github.com/paddockhq/paddock/internal/api/wire"

	"sync"
	"time"
)

// Event is wire.Event.
type Event = wire.Event

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

// Point is wire.Point.
type Point = wire.Point

// ParsePoint reads a place in the history as `paddock events` and GET /v1/events take
// it (wire.ParsePoint).
func ParsePoint(s string, now time.Time, allowSeq bool) (Point, error) {
	return wire.ParsePoint(s, now, allowSeq)
}
