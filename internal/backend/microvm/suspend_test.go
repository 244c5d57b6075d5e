package microvm_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
)

// TestSuspendResume: a suspended VM keeps what ran in it; start resumes it with the
// same processes (a sleeper, a counter whose only record is in memory, on /tmp's
// tmpfs, renamed into place so that a read never sees it half written) and the
// workspace, and the saved state is gone after. A saved state that does not load
// makes start boot afresh from the disk, saying so; stop on a suspended VM drops its
// saved memory. The VM's clock is a clock (the TSC under TCG), before and after.
func TestSuspendResume(t *testing.T) {
	b := newBackend(t, nil)
	ctx := context.Background()
	id := backend.ID("suspend")
	dir := filepath.Join(b.Dir(), string(id))
	saved := filepath.Join(dir, "vmstate")
	startSandbox(t, b, id)
	c := connect(t, b, id)
	run(t, c, "echo kept > /workspace/f && echo in-memory > /tmp/m")
	sleeper := run(t, c, "nohup sleep 1000 >/dev/null 2>&1 & echo $!")
	counter := run(t, c, `nohup sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; sleep 0.1; done' >/dev/null 2>&1 & echo $!`)
	// The counter has counted (a loaded host's emulated VM takes more than a second to
	// start a background shell: a fixed pause found no /tmp/count in a whole test run).
	before := count(t, run(t, c, "i=0; until [ -s /tmp/count ] && [ \"$(cat /tmp/count)\" -ge 5 ]; do i=$((i+1)); [ $i -lt 600 ] || exit 1; sleep 0.1; done; cat /tmp/count"))

	if err := b.Suspend(ctx, id); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.State(ctx, id); st.State != backend.StateSuspended {
		t.Fatalf("State after Suspend = %+v, want suspended", st)
	}
	if procs := qemuProcesses(dir); len(procs) != 0 {
		t.Fatalf("QEMU still runs after Suspend: %v", procs)
	}
	if fi, err := os.Stat(saved); err != nil || fi.Size() == 0 {
		t.Fatalf("the saved state: %v", err)
	}
	if _, err := b.Dial(ctx, id); err == nil {
		t.Fatal("Dial to a suspended VM succeeded")
	}

	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.State(ctx, id); st.State != backend.StateRunning || st.Detail != "" {
		t.Fatalf("State after resuming = %+v, want running, nothing to say", st)
	}
	if _, err := os.Stat(saved); !os.IsNotExist(err) {
		t.Fatalf("the saved state is still there after a resume: %v", err)
	}
	c = connect(t, b, id)
	got := run(t, c, "kill -0 "+sleeper+" && kill -0 "+counter+" && echo alive; cat /workspace/f /tmp/m")
	if got != "alive\nkept\nin-memory" {
		t.Fatalf("after suspend and resume: %q, want the sleeper and the counter alive and the files kept", got)
	}
	first := count(t, run(t, c, "cat /tmp/count"))
	time.Sleep(time.Second)
	second := count(t, run(t, c, "cat /tmp/count"))
	if first < before || second <= first {
		t.Fatalf("the counter went %d before the suspend, then %d and %d: want it counting on from where it was", before, first, second)
	}
	// The VM keeps time with a clock that a resume carries over (the TSC under TCG,
	// kvm-clock under KVM), not by counting the timer's ticks.
	if cs := run(t, c, "cat /sys/devices/system/clocksource/clocksource0/current_clocksource"); cs != "tsc" && cs != "kvm-clock" {
		t.Fatalf("the VM's clock source is %q after a resume, want tsc or kvm-clock", cs)
	}

	// A saved state that does not load: start boots from the disk and says so.
	if err := b.Suspend(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(saved, []byte("not a VM's state\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatalf("Start with a saved state that does not load: %v", err)
	}
	st, _ := b.State(ctx, id)
	t.Logf("State after a failed resume: %+v", st)
	if st.State != backend.StateRunning || !strings.Contains(st.Detail, "started afresh") || !strings.Contains(st.Detail, "did not load") {
		t.Fatalf("State after a failed resume = %+v, want running, saying it started afresh", st)
	}
	c = connect(t, b, id)
	if got := run(t, c, "cat /workspace/f; kill -0 "+sleeper+" 2>/dev/null && echo alive || echo gone"); got != "kept\ngone" {
		t.Fatalf("after a cold boot in place of the resume: %q, want the workspace kept and the sleeper gone", got)
	}

	// Stop on a suspended VM: its memory is dropped, it is stopped.
	if err := b.Suspend(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.State(ctx, id); st.State != backend.StateStopped {
		t.Fatalf("State after Stop of a suspended VM = %+v, want stopped", st)
	}
	if _, err := os.Stat(saved); !os.IsNotExist(err) {
		t.Fatalf("the saved state is still there after Stop: %v", err)
	}
	if err := b.Suspend(ctx, id); err == nil {
		t.Fatal("Suspend of a stopped VM succeeded")
	}
}

func count(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("the counter: %q", s)
	}
	return n
}
