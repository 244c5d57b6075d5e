package sandbox

import (
	"context"

	"github.com/paddockhq/paddock/internal/autosync"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/netpolicy"
	"github.com/paddockhq/paddock/internal/store"
)

// host is the Service as the packages it drives (autosync, netpolicy) see it.
type host struct{ s *Service }

var (
	_ autosync.Sandboxes  = host{}
	_ netpolicy.Sandboxes = host{}
)

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
