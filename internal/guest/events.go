package guest

import (
	"context"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

const (
	// heartbeatInterval is how often Events.Subscribe sends a heartbeat.
	heartbeatInterval = 5 * time.Second
	// subscriberBuffer is how many events a subscriber may fall behind before its call
	// is ended (the daemon subscribes again and has lost nothing durable: statuses stay
	// in their files, ports and branches in the sandbox).
	subscriberBuffer = 256
)

// hub fans the watchers' events out to every Subscribe call. The watchers run while at
// least one call is subscribed, so a guest nobody listens to does no work.
type hub struct {
	watch func(ctx context.Context, emit func(*guestpb.Event))

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	stopRun context.CancelFunc
	runDone chan struct{} // closed when the last run of the watchers has returned
}

type subscriber struct {
	ch       chan *guestpb.Event
	overflow chan struct{} // closed when the subscriber fell behind
}

func newHub(watch func(ctx context.Context, emit func(*guestpb.Event))) *hub {
	return &hub{watch: watch, subs: map[*subscriber]struct{}{}}
}

// subscribe adds a subscriber, starting the watchers for the first.
func (h *hub) subscribe() (*subscriber, func()) {
	sub := &subscriber{ch: make(chan *guestpb.Event, subscriberBuffer), overflow: make(chan struct{})}
	h.mu.Lock()
	h.subs[sub] = struct{}{}
	if len(h.subs) == 1 && h.watch != nil {
		ctx, cancel := context.WithCancel(context.Background())
		prev, done := h.runDone, make(chan struct{})
		h.stopRun, h.runDone = cancel, done
		go func() {
			defer close(done)
			if prev != nil {
				// The previous run has been told to stop: let it end first, so that two
				// runs never report the same change.
				<-prev
			}
			h.watch(ctx, h.publish)
		}()
	}
	h.mu.Unlock()
	return sub, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.subs[sub]; !ok {
			return
		}
		delete(h.subs, sub)
		if len(h.subs) == 0 && h.stopRun != nil {
			h.stopRun()
			h.stopRun = nil
		}
	}
}

// publish hands ev to every subscriber without ever blocking: one that has no room is
// marked as fallen behind and dropped.
func (h *hub) publish(ev *guestpb.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		select {
		case sub.ch <- ev:
		default:
			close(sub.overflow)
			delete(h.subs, sub)
		}
	}
}

type eventsService struct {
	s *Server
}

// Subscribe sends a heartbeat at once and then every heartbeatInterval, and each event
// the watchers report, until the call ends.
func (e eventsService) Subscribe(_ *guestpb.SubscribeRequest, stream guestpb.DRPCEvents_SubscribeStream) error {
	sub, unsubscribe := e.s.events.subscribe()
	defer unsubscribe()
	t := time.NewTicker(heartbeatInterval)
	defer t.Stop()
	if err := stream.Send(newEvent(guestproto.EventHeartbeat, nil)); err != nil {
		return err
	}
	for {
		var ev *guestpb.Event
		select {
		case <-stream.Context().Done():
			return nil
		case <-sub.overflow:
			return guestproto.Errorf(guestproto.ResourceExhausted, "events: the subscriber fell behind; subscribe again")
		case <-t.C:
			ev = newEvent(guestproto.EventHeartbeat, nil)
		case ev = <-sub.ch:
		}
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
}

func newEvent(kind string, attrs map[string]string) *guestpb.Event {
	return &guestpb.Event{TimeUnixNano: time.Now().UnixNano(), Kind: kind, Attrs: attrs}
}
