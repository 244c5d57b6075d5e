package backendtest

import (
	"bytes"
	"context"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
)

func testLifecycle(t *testing.T, h Harness) {
	ctx := context.Background()
	id := newID()
	spec := h.Spec(id)
	wantState(t, h, id, backend.StateMissing)
	if err := h.Backend.Create(ctx, spec); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { h.Backend.Destroy(context.Background(), id) })
	wantState(t, h, id, backend.StateCreated)
	if err := h.Backend.Create(ctx, spec); err != nil {
		t.Fatalf("second Create must be a no-op, got %v", err)
	}
	if err := h.Backend.Start(ctx, id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	wantState(t, h, id, backend.StateRunning)
	if err := h.Backend.Start(ctx, id); err != nil {
		t.Fatalf("Start on a running sandbox must be a no-op, got %v", err)
	}

	sb := &sandbox{h: h, id: id, client: connect(t, h, id)}
	sb.mustRun(t, "echo kept > /workspace/kept.txt && mkdir -p /home/agent/.cfg && echo home > /home/agent/.cfg/f")
	if err := h.Backend.Create(ctx, spec); err != nil {
		t.Fatalf("Create on a running sandbox must be a no-op, got %v", err)
	}
	sb.mustRun(t, "sleep 300 >/dev/null 2>&1 &")

	if err := h.Backend.Stop(ctx, id); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	wantState(t, h, id, backend.StateStopped)
	if err := h.Backend.Stop(ctx, id); err != nil {
		t.Fatalf("Stop on a stopped sandbox must be a no-op, got %v", err)
	}
	if conn, err := h.Backend.Dial(ctx, id); err == nil {
		conn.Close()
		t.Fatal("Dial of a stopped sandbox succeeded")
	}

	if err := h.Backend.Start(ctx, id); err != nil {
		t.Fatalf("Start after Stop: %v", err)
	}
	wantState(t, h, id, backend.StateRunning)
	sb.client = connect(t, h, id)
	if got := sb.mustRun(t, "cat /workspace/kept.txt /home/agent/.cfg/f"); got != "kept\nhome" {
		t.Fatalf("after stop and start, workspace and home hold %q, want kept and home", got)
	}
	if got := sb.mustRun(t, "ps -e -o comm= 2>/dev/null | grep -c '^sleep$' || true"); got != "0" {
		t.Fatalf("a process survived Stop: %s sleep processes", got)
	}

	if err := h.Backend.Destroy(ctx, id); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	wantState(t, h, id, backend.StateMissing)
	if h.Leftovers != nil {
		if left := h.Leftovers(id); len(left) > 0 {
			t.Fatalf("Destroy left behind:\n%s", bytes.Join(toBytes(left), []byte("\n")))
		}
	}
	if err := h.Backend.Destroy(ctx, id); err != nil {
		t.Fatalf("Destroy of a destroyed sandbox must be a no-op, got %v", err)
	}
	if err := h.Backend.Start(ctx, id); err == nil {
		t.Fatal("Start of a destroyed sandbox succeeded")
	}
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// testReconnect checks that the agent is resident: a client going away leaves processes
// running, and a new connection finds them.
func testReconnect(t *testing.T, sb *sandbox) {
	sb.mustRun(t, "nohup sleep 600 >/dev/null 2>&1 & echo $! > /tmp/sleeper.pid")
	sb.client.Close()
	sb.client = connect(t, sb.h, sb.id)
	if got := sb.mustRun(t, "kill -0 $(cat /tmp/sleeper.pid) && echo alive"); got != "alive" {
		t.Fatalf("a background process did not survive the connection: %q", got)
	}
	sb.mustRun(t, "kill $(cat /tmp/sleeper.pid)")
}
