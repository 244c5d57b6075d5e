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

// Host is the service as the automatic syncs (autosync), which the daemon makes beside
// it, see sandboxes: a viewer's look-up of a record, the live guest connection, the
// event log.
type Host struct{ s *Service }

// Host returns the service as autosync sees it.
func (s *Service) Host() Host { return Host{s} }

var (
	_ autosync.Sandboxes  = Host{}
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
func (h Host) Get(ctx context.Context, name string) (store.Sandbox, error) {
	return h.s.record(ctx, name)
}

// Live returns the sandbox's live guest connection, or nil.
func (h Host) Live(id string) *guestclient.Client { return h.s.live(id) }

// Emit records and publishes an event of a sandbox.
func (h Host) Emit(ctx context.Context, sb store.Sandbox, ev events.Event) {
	h.s.Emit(ctx, sb, ev)
}
