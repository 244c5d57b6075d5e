package conform

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestclient"
)

// The resource limits every backend enforces: a sandbox of its own with small limits, in
// which a fork bomb, a memory hog and a full /tmp each hit their limit while the guest
// guest, the host side and the sandbox itself keep working.

// smallLimits are the limits of the limits sandbox: small enough to reach quickly.
var smallLimits = backend.Limits{CPUs: 1, MemoryBytes: 256 << 20, Pids: 128}

// smallLimits are the limits sandbox's limits on this backend: the process limit is the
// backend's own where it has one for every sandbox.
func (h Harness) smallLimits() backend.Limits {
	l := smallLimits
	if h.PidsLimit != 0 {
		l.Pids = h.PidsLimit
	}
	return l
}

// testLimits runs the limit checks in a sandbox of their own.
func testLimits(t T, h Harness) {
	if !h.Backend.Describe().Limits {
		t.Fatalf("backend %s enforces no resource limits: its description says so", h.Backend.Name())
	}
	lr := h.Backend.(backend.LimitReader)
	id := NewID()
	spec := h.Spec(id)
	want := h.smallLimits()
	spec.CPUs, spec.MemoryBytes, spec.PidsLimit = want.CPUs, want.MemoryBytes, want.Pids
	sb := startSpec(t, h, id, spec)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	got, err := lr.Limits(ctx, id)
	var ne *backend.LimitsNotEnforcedError
	if errors.As(err, &ne) && os.Getenv("CI") == "" {
		t.Skipf("limits are not enforced here: %s (fix: %s)", ne.Reason, ne.Fix)
	}
	if err != nil {
		t.Fatalf("Limits: %v", err)
	}
	t.Run("Reported", func(t T) {
		if got != want {
			t.Fatalf("the backend enforces %+v, want %+v", got, want)
		}
	})
	if h.LimitsEndSandbox {
		t.Run("ForkBomb", func(t T) { testLimitEndsSandbox(t, sb, forkBombArgv(h.smallLimits().Pids)) })
		sb.client = connect(t, h, id)
		t.Run("MemoryHog", func(t T) { testLimitEndsSandbox(t, sb, memoryHogArgv()) })
		sb.client = connect(t, h, id)
		t.Run("TmpFull", func(t T) { testTmpFull(t, sb) })
		return
	}
	t.Run("ForkBomb", func(t T) { testForkBomb(t, sb) })
	sb.client = connect(t, h, id) // the bomb restarted the sandbox, and its client ended with it
	t.Run("MemoryHog", func(t T) { testMemoryHog(t, sb) })
	t.Run("TmpFull", func(t T) { testTmpFull(t, sb) })
}

// forkBomb forks sleeping children until fork fails, says so once, and goes on trying,
// taking every process slot that frees up; it gives up after twice the limit.
const forkBomb = `
import os, sys, time
limit = int(sys.argv[1])
started, failed = 0, False
while started < 2 * limit:
    try:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        started += 1
    except OSError as e:
        if not failed:
            print("started", started, "then fork failed:", e, flush=True)
            failed = True
        time.sleep(0.005)
print("started", started, "without a failure", flush=True)
`

// testForkBomb runs a fork bomb that keeps every process slot taken and checks,
// meanwhile, that a process started before keeps answering, that the guest and the host
// side answer, that a second exec returns (it cannot fork: it must say so, not hang),
// and that the sandbox can be stopped, bomb and all, and started again.
func testForkBomb(t T, sb *sandbox) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A process started before the bomb: cat, which echoes its input and forks nothing.
	echoIn, echoInW := io.Pipe()
	echoOut := &syncBuffer{}
	echoDone := make(chan struct{})
	go func() {
		defer close(echoDone)
		sb.client.Exec(ctx, guestclient.ExecOptions{Argv: []string{"cat"}, Stdin: echoIn, Stdout: echoOut})
	}()
	echoInW.Write([]byte("before\n"))
	waitFor(t, echoOut, "before")

	bombOut := &syncBuffer{}
	bombDone := make(chan struct{})
	go func() {
		defer close(bombDone)
		sb.client.Exec(ctx, guestclient.ExecOptions{Argv: []string{"python3", "-c", forkBomb, strconv.FormatInt(sb.h.smallLimits().Pids, 10)},
			Stdout: bombOut, Stderr: bombOut})
	}()
	waitFor(t, bombOut, "started")
	t.Logf("the bomb: %s", strings.TrimSpace(bombOut.String()))
	if !strings.Contains(bombOut.String(), "fork failed") {
		t.Fatalf("the fork bomb was not stopped by the pids limit (%d): %s", sb.h.smallLimits().Pids, bombOut.String())
	}

	// With every slot taken: the guest, the process started before, the host side and a
	// second exec, each within the deadline. (A new connection may need a process, as
	// docker's exec does: the daemon's connection is the one that stays.)
	deadline, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	for range 10 {
		if _, err := sb.client.Info(deadline); err != nil {
			t.Fatalf("the agent does not answer during the fork bomb: %v", err)
		}
	}
	echoInW.Write([]byte("during\n"))
	waitFor(t, echoOut, "during")
	var secondOut strings.Builder
	secondCode, secondErr := sb.client.Exec(deadline, guestclient.ExecOptions{Argv: []string{"echo", "second"}, Stdout: &secondOut})
	t.Logf("a second exec during the bomb: exit %d, %v, %q", secondCode, secondErr, secondOut.String())
	if deadline.Err() != nil {
		t.Fatal("a second exec during the fork bomb did not return")
	}
	var startErr *guestclient.ExecStartError
	if secondErr != nil && !errors.As(secondErr, &startErr) {
		t.Fatalf("a second exec during the fork bomb failed otherwise than by not starting: %v", secondErr)
	}
	if st, err := sb.h.Backend.State(deadline, sb.id); err != nil || st.State != backend.StateRunning {
		t.Fatalf("State during the fork bomb: %v, %v", st, err)
	}
	if _, err := sb.client.Info(deadline); err != nil {
		t.Fatalf("the agent stopped answering during the fork bomb: %v", err)
	}

	// The sandbox stops, bomb and all, and starts again empty.
	echoInW.Close()
	if err := sb.h.Backend.Stop(ctx, sb.id); err != nil {
		t.Fatalf("Stop during the fork bomb: %v", err)
	}
	wantState(t, sb.h, sb.id, backend.StateStopped)
	<-echoDone
	<-bombDone
	if err := sb.h.Backend.Start(ctx, sb.id); err != nil {
		t.Fatalf("Start after the fork bomb: %v", err)
	}
	sb.client = connect(t, sb.h, sb.id)
	if got := sb.mustRun(t, countProcs("sleep", "python3")); got != "0" {
		t.Fatalf("%s of the bomb's processes survived Stop", got)
	}
}

// testMemoryHog makes a process take more memory than the sandbox has: it must be killed
// or refused, and the sandbox must go on.
func testMemoryHog(t T, sb *sandbox) {
	// tail keeps its input's last line, here one line of twice the sandbox's memory.
	hog := "head -c " + strconv.FormatInt(2*smallLimits.MemoryBytes, 10) + " /dev/zero | tail -n 1 >/dev/null"
	code, _, errOut := sb.run(t, hog)
	t.Logf("the memory hog exited %d: %s", code, strings.TrimSpace(errOut))
	if code == 0 {
		t.Fatalf("a process held %d MiB in a sandbox of %d MiB", 2*smallLimits.MemoryBytes>>20, smallLimits.MemoryBytes>>20)
	}
	if _, err := sb.client.Info(ctxT(t)); err != nil {
		t.Fatalf("the agent does not answer after the memory hog: %v", err)
	}
	if got := sb.mustRun(t, "echo alive"); got != "alive" {
		t.Fatalf("exec after the memory hog: %q", got)
	}
}

// testTmpFull writes past the size of /tmp, which must fail with ENOSPC: /tmp is a memory
// filesystem, and an unsized one could take the host's memory.
func testTmpFull(t T, sb *sandbox) {
	size, err := strconv.ParseInt(sb.mustRun(t, "df -B1 --output=size /tmp | tail -n 1 | tr -d ' '"), 10, 64)
	if err != nil {
		t.Fatalf("size of /tmp: %v", err)
	}
	if size > smallLimits.MemoryBytes {
		t.Fatalf("/tmp holds %d MiB in a sandbox of %d MiB of memory", size>>20, smallLimits.MemoryBytes>>20)
	}
	code, _, errOut := sb.run(t, "head -c "+strconv.FormatInt(size+(1<<20), 10)+" /dev/zero > /tmp/fill")
	sb.mustRun(t, "rm -f /tmp/fill")
	if code == 0 || !strings.Contains(errOut, "No space left on device") {
		t.Fatalf("writing %d MiB into a /tmp of %d MiB: exit %d, %q; want ENOSPC", (size>>20)+1, size>>20, code, errOut)
	}
}
