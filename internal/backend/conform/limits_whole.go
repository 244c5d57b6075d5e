package conform

import (
	"context"
	"strconv"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient"
)

// testLimitEndsSandbox is the fork bomb or memory hog check of a backend whose limits
// bind the sandbox as a whole (Harness.LimitsEndSandbox): argv, run inside, must end the
// whole sandbox, its processes with it, while the host side keeps answering; then the
// sandbox comes back by itself (its engine restarts it), empty, with a new guest that
// answers. The caller connects sb anew afterwards.
func testLimitEndsSandbox(t T, sb *sandbox, argv []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before, err := sb.client.Info(ctx)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	start := time.Now()
	done := make(chan struct{})
	var code int
	var execErr error
	out := &syncBuffer{}
	go func() {
		defer close(done)
		code, execErr = sb.client.Exec(ctx, guestclient.ExecOptions{Argv: argv, Stdout: out, Stderr: out})
	}()
	// The host side answers all along.
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-time.After(500 * time.Millisecond):
			if _, err := sb.h.Backend.State(ctx, sb.id); err != nil {
				t.Fatalf("State while the limit is being hit: %v", err)
			}
		}
	}
	if execErr == nil {
		t.Fatalf("the process ran to its end (exit %d) in a sandbox whose limit it passes: %s", code, out.String())
	}
	t.Logf("the sandbox ended under it after %v: %v", time.Since(start).Round(time.Second), execErr)

	// Start returns once the guest answers (a no-op but for the wait on a sandbox that
	// runs); the engine may still be between two runs of it.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := sb.h.Backend.Start(ctx, sb.id)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox did not come back after its limit ended it: %v", err)
		}
		time.Sleep(time.Second)
	}
	t.Logf("the sandbox is running again after %v", time.Since(start).Round(time.Second))
	c := connect(t, sb.h, sb.id)
	after, err := c.Info(ctx)
	if err != nil {
		t.Fatalf("Info after the sandbox came back: %v", err)
	}
	if after.GetStartedUnix() < before.GetStartedUnix() || after.GetStartedUnix() == before.GetStartedUnix() && after.GetPid() == before.GetPid() {
		t.Fatalf("the agent is the one from before (pid %d, started %d): the sandbox was not ended", after.GetPid(), after.GetStartedUnix())
	}
	fresh := &sandbox{h: sb.h, id: sb.id, client: c}
	if got := fresh.mustRun(t, countProcs("sleep", "python3", "tail")); got != "0" {
		t.Fatalf("%s processes of before survived", got)
	}
}

// forkBombArgv and memoryHogArgv are the fork bomb and the memory hog of the limits checks.
func forkBombArgv(pids int64) []string {
	return []string{"python3", "-c", forkBomb, strconv.FormatInt(pids, 10)}
}

func memoryHogArgv() []string {
	return []string{"sh", "-c", "head -c " + strconv.FormatInt(2*smallLimits.MemoryBytes, 10) + " /dev/zero | tail -n 1 >/dev/null"}
}
