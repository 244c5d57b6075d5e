package docker_test

import (
	"context"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/docker"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestSoak runs create, start, exec and destroy cycles and checks they leave no
// container, volume or file behind. The short form runs with every test;
// PADDOCK_SOAK=1000 runs the long one.
func TestSoak(t *testing.T) {
	b, err := docker.New(backend.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Available(context.Background()); err != nil {
		if testenv.Strict() {
			t.Fatalf("docker must work here: %v", err)
		}
		t.Skipf("docker is not available: %v", err)
	}
	agent := smallGuest(t)
	backendtest.Soak(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "soak-" + string(id), GuestBinary: agent.Path, GuestSHA256: agent.SHA256}
		},
		Leftovers: b.Leftovers,
	}, 5)
}
