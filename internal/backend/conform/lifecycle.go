package conform

import (
	"bytes"
	"context"
	"strings"

	"github.com/paddockhq/paddock/internal/backend"
)

func testLifecycle(t T, h Harness) {
	ctx := context.Background()
	id := NewID()
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
	if got := sb.mustRun(t, countProcs("sleep")); got != "1" {
		t.Fatalf("the count of processes sees %s sleep processes, want the 1 just started", got)
	}

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
	if got := sb.mustRun(t, countProcs("sleep")); got != "0" {
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

// testReconnect checks that the guest is resident: a client going away leaves processes
// running, and a new connection finds them.
func testReconnect(t T, sb *sandbox) {
	sb.mustRun(t, "nohup sleep 600 >/dev/null 2>&1 & echo $! > /tmp/sleeper.pid")
	sb.client.Close()
	sb.client = connect(t, sb.h, sb.id)
	if got := sb.mustRun(t, "kill -0 $(cat /tmp/sleeper.pid) && echo alive"); got != "alive" {
		t.Fatalf("a background process did not survive the connection: %q", got)
	}
	sb.mustRun(t, "kill $(cat /tmp/sleeper.pid)")
}

// countProcs is a shell command printing how many processes of the sandbox run one of
// the programs named (their comm), read from /proc itself: a count through ps would print
// 0 in an image without ps and pass every check it is in.
func countProcs(names ...string) string {
	return `n=0; for c in /proc/[0-9]*/comm; do read -r x < "$c" 2>/dev/null || continue; case " ` + strings.Join(names, " ") + ` " in *" $x "*) n=$((n+1));; esac; done; echo $n`
}

// countArgs is countProcs for processes whose command line starts with prefix.
func countArgs(prefix string) string {
	return `n=0; for c in /proc/[0-9]*/cmdline; do a=$(tr '\0' ' ' < "$c" 2>/dev/null) || continue; case "$a" in "` + prefix + `"*) n=$((n+1));; esac; done; echo $n`
}
