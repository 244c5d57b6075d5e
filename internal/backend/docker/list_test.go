package docker

import (
	"context"
	"errors"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
)

// TestStatesAndLimits: the one listing `ls` reads says what State says of a running, a
// stopped, a made but never started and a missing sandbox; the limits kept from it are
// the container's, and a sandbox made again with other limits under the same ID shows
// the new ones, not those kept of its old container.
func TestStatesAndLimits(t *testing.T) {
	d, agent := directBackend(t)
	ctx := context.Background()
	running := startSandbox(t, d, agent, "listrun")
	stopped := startSandbox(t, d, agent, "liststop")
	if err := d.Stop(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	made := backend.ID("listmade" + string(running[len("listrun"):]))
	if err := d.Create(ctx, backend.Spec{ID: made, Name: "listmade", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Destroy(context.Background(), made) })

	states, err := d.States(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[backend.ID]backend.State{running: backend.StateRunning, stopped: backend.StateStopped, made: backend.StateCreated, "listgone": backend.StateMissing}
	for id, w := range want {
		one, err := d.State(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		listed, ok := states[id]
		if !ok {
			listed = backend.Status{State: backend.StateMissing}
		}
		if listed != one || listed.State != w {
			t.Errorf("%s: listed %+v, State %+v; want %s", id, listed, one, w)
		}
	}

	l, err := d.Limits(ctx, running)
	if err != nil || l != backend.LimitsFor(backend.Spec{}) {
		t.Fatalf("Limits = %v, %v; want the defaults %v", l, err, backend.LimitsFor(backend.Spec{}))
	}
	if _, err := d.Limits(ctx, stopped); !errors.Is(err, backend.ErrNotRunning) {
		t.Fatalf("Limits of a stopped sandbox: %v", err)
	}

	// Made again under the same ID with other limits, as `up --fresh --memory` does.
	if err := d.Destroy(ctx, running); err != nil {
		t.Fatal(err)
	}
	small := backend.Spec{ID: running, Name: "listrun", GuestBinary: agent.Path, GuestSHA256: agent.SHA256, CPUs: 0.5, MemoryBytes: 256 << 20, PidsLimit: 200}
	if err := d.Create(ctx, small); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, running); err != nil {
		t.Fatal(err)
	}
	if _, err := d.States(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := d.Limits(ctx, running); err != nil || l != backend.LimitsFor(small) {
		t.Fatalf("Limits after the sandbox was made again = %v, %v; want %v", l, err, backend.LimitsFor(small))
	}
}
