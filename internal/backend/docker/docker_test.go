package docker_test

import (
	"context"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/docker"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/testenv"
)

// smallGuest is the small guest (cmd/paddock-guest), as the daemon injects it, in a
// directory of the test. Its hash changes only with the guest's code, so the engine keeps
// one guest volume across test runs, not one per test binary.
func smallGuest(tb testing.TB) sandbox.GuestBinary {
	tb.Helper()
	path, err := testenv.SmallGuest()
	if err != nil {
		tb.Fatal(err)
	}
	agent, err := sandbox.InstallGuest(path, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return agent
}

// TestConformance runs the suite on sandboxes reached through their direct channel (the
// backend has a directory and runs as root here), the exec bridge where they cannot be.
func TestConformance(t *testing.T) {
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
	backendtest.Run(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "conf-" + string(id), GuestBinary: agent.Path, GuestSHA256: agent.SHA256}
		},
		Leftovers: b.Leftovers,
		Allows:    b.Expect(context.Background(), "").Allows,
	})
}
