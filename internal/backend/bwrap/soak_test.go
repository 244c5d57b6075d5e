package bwrap_test

import (
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
)

// TestSoak runs create, start, exec and destroy cycles and checks they leave nothing on
// the host. The short form runs with every test; PADDOCK_SOAK=1000 runs the long one.
func TestSoak(t *testing.T) {
	b, agent := newBackend(t)
	backendtest.Soak(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "soak-" + string(id), GuestBinary: agent.Path, GuestSHA256: agent.SHA256}
		},
		Leftovers: b.Leftovers,
		Dir:       b.Dir(),
	}, 30)
}
