package cli_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// BenchmarkTaskOverhead: a task of 4 attempts, each agent working 15 s, committing and
// ending its turn as the agents' hooks do (taskBenchTurn), checked by one check, from
// `task new` until `task show` says done; against the same by hand: 4 sandboxes made
// with `up`, a session started in each with `chat --new` on the same command, its turn's
// end seen in `chat --list --json`, the check run with `exec`, the four in parallel. Both
// sides look every 100 ms. paddock-% is the task's time beyond the by-hand one, in
// percent of the task's wall time (the median of the iterations').
func BenchmarkTaskOverhead(b *testing.B) {
	tb := newTaskBench(b)
	const n = 4
	work := taskBenchTurn(15 * time.Second)
	var task, hand []time.Duration
	byTask := func(name string) time.Duration {
		start := time.Now()
		tb.newTask(name, work, n, "--check", taskBenchCheck)
		end := tb.until(5*time.Minute, name+" done", func() bool {
			t := tb.show(name)
			if t.State == wire.TaskFailed {
				tb.b.Fatalf("task %s failed: %s", name, t.Error)
			}
			return t.State == wire.TaskDone
		})
		t := tb.show(name)
		var started, lag, event time.Duration
		for _, a := range t.Attempts {
			if a.Passed == nil || !*a.Passed {
				b.Fatalf("attempt %d of %s did not pass its check: %+v", a.N, name, a.Checks)
			}
			// Where the time goes, by the daemon's records: the attempt's agent at its
			// prompt, its turn's end seen, its check begun and ended.
			began, ended := tb.workTimes(a.Sandbox)
			started, lag = max(started, a.Started.Sub(start)), max(lag, a.Ended.Sub(ended))
			event = max(event, tb.turnEvent(a.Sandbox).Sub(ended))
			if testing.Verbose() {
				c := a.Checks[0]
				b.Logf("%s/%d: started +%v, command ran +%v..+%v, turn ended +%v, check at +%v for %dms; task updated +%v",
					name, a.N, a.Started.Sub(start).Round(time.Millisecond), began.Sub(start).Round(time.Millisecond),
					ended.Sub(start).Round(time.Millisecond), a.Ended.Sub(start).Round(time.Millisecond),
					c.At.Sub(start).Round(time.Millisecond), c.Millis, t.Updated.Sub(start).Round(time.Millisecond))
				tb.logEvents(a.Sandbox, start)
			}
		}
		b.Logf("%s: the last agent at its prompt +%v; the longest wait from a command's end to its event %v, to its turn's end recorded %v; done +%v",
			name, started.Round(time.Millisecond), event.Round(time.Millisecond), lag.Round(time.Millisecond), t.Updated.Sub(start).Round(time.Millisecond))
		tb.h.Must("task", "rm", name)
		return end.Sub(start)
	}
	byHand := func(name string) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		seen := make([]time.Time, n+1)
		for k := 1; k <= n; k++ {
			sb := fmt.Sprintf("%s-%d", name, k)
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				seen[k], err = tb.attemptByHand(sb, work)
				errs <- err
			}()
		}
		wg.Wait()
		took := time.Since(start)
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		var event, lag time.Duration
		for k := 1; k <= n; k++ {
			sb := fmt.Sprintf("%s-%d", name, k)
			_, ended := tb.workTimes(sb)
			event, lag = max(event, tb.turnEvent(sb).Sub(ended)), max(lag, seen[k].Sub(ended))
			tb.logEvents(sb, start)
			tb.h.Must("rm", sb, "-f", "--purge")
		}
		b.Logf("%s: the longest wait from a command's end to its event %v, to its end seen in `chat --list` %v",
			name, event.Round(time.Millisecond), lag.Round(time.Millisecond))
		return took
	}
	b.ResetTimer()
	var pct []float64
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			task = append(task, byTask(fmt.Sprintf("task%d", i)))
			hand = append(hand, byHand(fmt.Sprintf("hand%d", i)))
		} else {
			hand = append(hand, byHand(fmt.Sprintf("hand%d", i)))
			task = append(task, byTask(fmt.Sprintf("task%d", i)))
		}
		pct = append(pct, 100*float64(task[i]-hand[i])/float64(task[i]))
		b.Logf("iteration %d: task %v, by hand %v: %.1f%%", i, task[i].Round(time.Millisecond), hand[i].Round(time.Millisecond), pct[i])
	}
	b.StopTimer()
	slices.Sort(pct)
	b.ReportMetric(float64(median(task).Milliseconds()), "task-ms")
	b.ReportMetric(float64(median(hand).Milliseconds()), "by-hand-ms")
	b.ReportMetric(pct[len(pct)/2], "paddock-%")
}

// attemptByHand does by hand what a task does for one attempt: a sandbox made with `up`,
// a branch of its own, a session started on the command, its end seen in `chat --list
// --json` (looked at every taskBenchPoll), the check run with `exec`. It runs beside
// others, so it returns its failure rather than failing the benchmark.
func (tb *taskBench) attemptByHand(sb, command string) (seen time.Time, err error) {
	if err := tb.startByHand(sb, command); err != nil {
		return seen, err
	}
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(taskBenchPoll) {
		if time.Now().After(deadline) {
			return seen, fmt.Errorf("%s's agent not done after 5 minutes", sb)
		}
		out, err := tb.runErr("chat", sb, "--list", "--json")
		if err != nil {
			return seen, err
		}
		var list []wire.SessionInfo
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return seen, err
		}
		i := slices.IndexFunc(list, func(s wire.SessionInfo) bool { return s.Name == "shell" })
		if i >= 0 && slices.Contains([]string{"idle", "waiting", "exited"}, list[i].Status) {
			seen = time.Now()
			break
		}
	}
	_, err = tb.runErr("exec", sb, "--", "sh", "-c", taskBenchCheck)
	return seen, err
}

// turnEvent is when the daemon recorded the event of the end of the agent's turn in
// sandbox sb: its session idle, or exited.
func (tb *taskBench) turnEvent(sb string) time.Time {
	tb.b.Helper()
	for _, line := range strings.Split(strings.TrimSpace(tb.h.Must("events", "--sandbox", sb, "--no-follow", "--last", "50", "--json")), "\n") {
		var ev struct {
			Kind  string
			Time  time.Time
			Attrs map[string]string
		}
		json.Unmarshal([]byte(line), &ev)
		if ev.Kind == "session-exited" || ev.Kind == "session-status" && ev.Attrs["status"] == "idle" {
			return ev.Time
		}
	}
	tb.b.Fatalf("%s: no event of its agent's turn's end", sb)
	return time.Time{}
}
