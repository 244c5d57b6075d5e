package sandbox

import (
	"context"
	"errors"

	"github.com/paddockhq/paddock/internal/autosync"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/events/eventlog"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/netpolicy"
	"github.com/paddockhq/paddock/internal/store"
)

// host is the Service as the packages it drives (autosync) see it.
type host struct{ s *Service }

var (
	_ autosync.Sandboxes  = host{}
	_ netpolicy.Sandboxes = Records{}
)

// Records finds sandboxes in the state as ctx's viewer sees them (another user's is not
// found), and records their events in the event log: what the parts the daemon makes
// before the sandbox service (the egress policy, netpolicy) need of sandboxes.
type Records struct {
	Store  *store.Store
	Events *eventlog.Log
}

// Get returns a sandbox's record, or a not-found error that says what to run.
func (r Records) Get(ctx context.Context, name string) (store.Sandbox, error) {
	sb, err := r.Store.GetSandbox(ctx, name)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !Sees(ctx, sb)) {
		return store.Sandbox{}, notFound(name)
	}
	return sb, err
}

// Emit records and publishes an event of a sandbox.
func (r Records) Emit(ctx context.Context, sb store.Sandbox, ev events.Event) {
	r.Events.Emit(ctx, sb, ev)
}

// Get returns a sandbox's record, or a not-found error that says what to run.
func (h host) Get(ctx context.Context, name string) (store.Sandbox, error) {
	return h.s.record(ctx, name)
}

// Live returns the sandbox's live guest connection, or nil.
func (h host) Live(id string) *guestclient.Client { return h.s.live(id) }

// Emit records and publishes an event of a sandbox.
func (h host) Emit(ctx context.Context, sb store.Sandbox, ev events.Event) {
	h.s.Emit(ctx, sb, ev)
}
