package agent

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/paddockhq/paddock/internal/agentproto"
	"github.com/paddockhq/paddock/internal/agentproto/agentpb"
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
// least one call is subscribed, so an agent nobody listens to does no work.
type hub struct {
	watch func(ctx context.Context, emit func(*agentpb.Event))

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	stopRun context.CancelFunc
	runDone chan struct{} // closed when the last run of the watchers has returned
}

type subscriber struct {
	ch       chan *agentpb.Event
	overflow chan struct{} // closed when the subscriber fell behind
}

func newHub(watch func(ctx context.Context, emit func(*agentpb.Event))) *hub {
	return &hub{watch: watch, subs: map[*subscriber]struct{}{}}
}

// subscribe adds a subscriber, starting the watchers for the first.
func (h *hub) subscribe() (*subscriber, func()) {
	sub := &subscriber{ch: make(chan *agentpb.Event, subscriberBuffer), overflow: make(chan struct{})}
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
func (h *hub) publish(ev *agentpb.Event) {
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
	agentpb.UnimplementedEventsServer
	s *Server
}

// Subscribe sends a heartbeat at once and then every heartbeatInterval, and each event
// the watchers report, until the call ends.
func (e eventsService) Subscribe(_ *agentpb.SubscribeRequest, stream agentpb.Events_SubscribeServer) error {
	sub, unsubscribe := e.s.events.subscribe()
	defer unsubscribe()
	t := time.NewTicker(heartbeatInterval)
	defer t.Stop()
	if err := stream.Send(newEvent(agentproto.EventHeartbeat, nil)); err != nil {
		return err
	}
	for {
		var ev *agentpb.Event
		select {
		case <-stream.Context().Done():
			return nil
		case <-sub.overflow:
			return status.Error(codes.ResourceExhausted, "events: the subscriber fell behind; subscribe again")
		case <-t.C:
			ev = newEvent(agentproto.EventHeartbeat, nil)
		case ev = <-sub.ch:
		}
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
}

func newEvent(kind string, attrs map[string]string) *agentpb.Event {
	return &agentpb.Event{TimeUnixNano: time.Now().UnixNano(), Kind: kind, Attrs: attrs}
}
