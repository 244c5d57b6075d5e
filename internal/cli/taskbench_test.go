package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/testenv"
)

// The tasks' benchmarks run `shell` attempts: the prompt is the session's command, so
// "the agent at its prompt" is its session started with the prompt, and what it does is
// known to the millisecond. Every figure is a ratio against a baseline measured in the
// same run.
const (
	// taskBenchSetup makes a prepared base worth copying: 1000 files of 8 KB (8 MB),
	// as an `npm ci` or a build cache would, in two processes: its own time is small, so
	// that what is measured is the base made, copied and the attempts started.
	taskBenchSetup = `mkdir -p gen && cd gen && head -c 8192000 /dev/urandom | split -b 8192 -a 3 - f`
	// taskBenchIdle is an agent that stays at work for the whole measure.
	taskBenchIdle = "sleep 600"
	// taskBenchCheck is the check of the overhead and landing benchmarks: it reads the
	// work's files and takes 300 ms of its own, as a short test suite.
	taskBenchCheck = `sleep 0.3; test -n "$(ls work-*.txt)"`
	// taskBenchPoll is how often both sides of a comparison look at how things stand.
	taskBenchPoll = 100 * time.Millisecond
)

// taskBenchWork is an agent that works for d, then commits a file of its own (work-
// BRANCH.txt, holding when it began and ended: attempts of one task never conflict),
// and exits.
func taskBenchWork(d time.Duration) string {
	return fmt.Sprintf(`s=$(date +%%s%%N); sleep %.1f; b=$(git branch --show-current | tr / -); echo "$s $(date +%%s%%N)" > "work-$b.txt"; git add -A && git commit -qm "work of $b"`, d.Seconds())
}

// taskBenchTurn is an agent that does taskBenchWork's work, then ends its turn as Claude
// Code's and Codex's hooks do (paddock's notify, status idle, in its session "shell"),
// and stays, as they do, for a next message.
func taskBenchTurn(d time.Duration) string {
	return taskBenchWork(d) + " && " + inside.GuestBinary + " " + inside.GuestCommand + " notify --status idle --session shell && exec sleep 600"
}

// taskBench is a home whose repository "repo" has a user's name for its commits, and
// helpers a benchmark's steps use.
type taskBench struct {
	b    *testing.B
	h    *clitest.Home
	repo string
}

func newTaskBench(b *testing.B) *taskBench {
	testenv.Program(b, "bwrap", "apt-get install bubblewrap")
	h, repo := e2eHome(b)
	tb := &taskBench{b: b, h: h, repo: repo}
	tb.git("config", "user.name", "bench")
	tb.git("config", "user.email", "bench@example.com")
	return tb
}

// git runs git in the host repository and returns its output, trimmed.
func (tb *taskBench) git(args ...string) string {
	tb.b.Helper()
	out, err := exec.Command("git", append([]string{"-C", tb.repo}, args...)...).CombinedOutput()
	if err != nil {
		tb.b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// show is `paddock task show NAME --json`.
func (tb *taskBench) show(name string) wire.Task {
	tb.b.Helper()
	var t wire.Task
	if err := json.Unmarshal([]byte(tb.h.Must("task", "show", name, "--json")), &t); err != nil {
		tb.b.Fatal(err)
	}
	return t
}

// until polls cond every taskBenchPoll for up to d, and returns when it first held.
func (tb *taskBench) until(d time.Duration, what string, cond func() bool) time.Time {
	tb.b.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.b.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(taskBenchPoll)
	}
	return time.Now()
}

// newTask starts a task of n shell attempts and returns when `task new` does.
func (tb *taskBench) newTask(name, prompt string, n int, extra ...string) {
	tb.b.Helper()
	args := append([]string{"task", "new", tb.repo, "--name", name, "--prompt", prompt, "--agents", fmt.Sprintf("shell:%d", n)}, extra...)
	tb.h.Must(args...)
}

// started is when the last of a task's attempts had its agent at its prompt (the
// daemon's record of its session started), waiting for it.
func (tb *taskBench) started(name string) time.Time {
	tb.b.Helper()
	var last time.Time
	tb.until(5*time.Minute, name+"'s attempts started", func() bool {
		t := tb.show(name)
		if t.State == wire.TaskFailed {
			tb.b.Fatalf("task %s failed: %s", name, t.Error)
		}
		last = time.Time{}
		for _, a := range t.Attempts {
			if a.State == wire.AttemptFailed {
				tb.b.Fatalf("attempt %d of %s failed: %s", a.N, name, a.Error)
			}
			if a.Started.IsZero() {
				return false
			}
			if a.Started.After(last) {
				last = a.Started
			}
		}
		return true
	})
	return last
}

// BenchmarkTaskStart: a task of 4 attempts started against a task of one, in the same
// run, alternating which goes first. The time is from `task new` to the daemon's record
// of the last attempt's agent at its prompt (its session started with the prompt as its
// command). setup: with --setup writing 1000 files of 8 KB, made once in the prepared
// base and copied into each attempt's sandbox; no-setup: without, each attempt's sandbox
// seeded from the repository alone.
func BenchmarkTaskStart(b *testing.B) {
	b.Run("setup", func(b *testing.B) { taskStart(b, "--setup", taskBenchSetup) })
	b.Run("no-setup", func(b *testing.B) { taskStart(b) })
	b.Run("by-hand", taskStartByHand)
}

// taskStartByHand is the reference of BenchmarkTaskStart/no-setup: the same by hand, 4
// sandboxes made with `up`, each with its branch and its session started with `chat
// --new` (startByHand), in parallel, against one; what the machine itself does with 4
// sandboxes started at once.
func taskStartByHand(b *testing.B) {
	tb := newTaskBench(b)
	var one, four []time.Duration
	run := func(name string, n int) time.Duration {
		start := time.Now()
		errs := make(chan error, n)
		for k := 1; k <= n; k++ {
			go func() { errs <- tb.startByHand(fmt.Sprintf("%s-%d", name, k), taskBenchIdle) }()
		}
		for range n {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		took := time.Since(start)
		for k := 1; k <= n; k++ {
			tb.h.Must("rm", fmt.Sprintf("%s-%d", name, k), "-f", "--purge")
		}
		return took
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			one = append(one, run(fmt.Sprintf("one%d", i), 1))
			four = append(four, run(fmt.Sprintf("four%d", i), 4))
		} else {
			four = append(four, run(fmt.Sprintf("four%d", i), 4))
			one = append(one, run(fmt.Sprintf("one%d", i), 1))
		}
		b.Logf("iteration %d: one sandbox %v, four %v", i, one[i].Round(time.Millisecond), four[i].Round(time.Millisecond))
	}
	b.StopTimer()
	o, f := median(one), median(four)
	b.ReportMetric(float64(f.Milliseconds()), "ms/4-sandboxes")
	b.ReportMetric(float64(o.Milliseconds()), "ms/1-sandbox")
	b.ReportMetric(float64(f)/float64(o), "x-one")
}

func taskStart(b *testing.B, extra ...string) {
	tb := newTaskBench(b)
	var one, four []time.Duration
	run := func(name string, n int) time.Duration {
		start := time.Now()
		tb.newTask(name, taskBenchIdle, n, extra...)
		took := tb.started(name).Sub(start)
		tb.logEvents(name+"-base", start)
		for k := 1; k <= n; k++ {
			tb.logEvents(fmt.Sprintf("%s-%d", name, k), start)
		}
		tb.h.Must("task", "rm", name)
		return took
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			one = append(one, run(fmt.Sprintf("one%d", i), 1))
			four = append(four, run(fmt.Sprintf("four%d", i), 4))
		} else {
			four = append(four, run(fmt.Sprintf("four%d", i), 4))
			one = append(one, run(fmt.Sprintf("one%d", i), 1))
		}
		b.Logf("iteration %d: one attempt %v, four %v", i, one[i].Round(time.Millisecond), four[i].Round(time.Millisecond))
	}
	b.StopTimer()
	o, f := median(one), median(four)
	b.ReportMetric(float64(f.Milliseconds()), "ms/4-attempts")
	b.ReportMetric(float64(o.Milliseconds()), "ms/1-attempt")
	b.ReportMetric(float64(f)/float64(o), "x-one")
}

// median is the middle of ds (the upper one of an even count): figures of a shared
// machine, where another's work may slow one iteration.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkTaskOverhead: a task of 4 attempts, each agent working 15 s then committing,
// checked by one check, from `task new` until `task show` says done; against the same by
// hand: 4 sandboxes made with `up`, a session started in each with `chat --new` on the
// same command, its end seen with `chat --list --json`, the check run with `exec`, the
// four in parallel. Both sides look every 100 ms. paddock-% is the task's time beyond
// the by-hand one, in percent of the task's wall time.
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

// BenchmarkTaskLand: landing one attempt (`task land NAME --attempt 1`: rebased onto the
// host's main in its sandbox, the check run there again, main fast-forwarded) from the
// command until the queue's entry is landed, against the same by hand with git on the
// host for the task's other attempt: `paddock sync` of its sandbox, a branch at what
// arrived, `git rebase main`, the check, `git merge --ff-only` into main. Before each,
// main gets a commit of its own, so that the rebase has work. The check takes 300 ms of
// its own; x-excl-checks leaves the by-hand check's measured time out of both.
func BenchmarkTaskLand(b *testing.B) {
	tb := newTaskBench(b)
	var task, hand, checks []time.Duration
	advance := func(what string) {
		os.WriteFile(filepath.Join(tb.repo, "main-"+what+".txt"), []byte(what+"\n"), 0o644)
		tb.git("add", "-A")
		tb.git("commit", "-qm", "main moves: "+what)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("land%d", i)
		tb.newTask(name, taskBenchWork(0), 2, "--check", taskBenchCheck)
		tb.until(5*time.Minute, name+" done", func() bool { return tb.show(name).State == wire.TaskDone })
		advance(name + "-a")
		b.StartTimer()

		// The task's landing of attempt 1, to the queue's record of it landed.
		start := time.Now()
		tb.h.Must("task", "land", name, "--attempt", "1")
		var landed wire.QueueEntry
		tb.until(5*time.Minute, name+"/1 landed", func() bool {
			var q []wire.QueueEntry
			if err := json.Unmarshal([]byte(tb.h.Must("task", "queue", name, "--json")), &q); err != nil {
				b.Fatal(err)
			}
			for _, e := range q {
				if e.Attempt == 1 {
					if e.State == wire.QueueFailed || e.State == wire.QueueConflict {
						b.Fatalf("%s/1: %s: %s", name, e.State, e.Detail)
					}
					landed = e
				}
			}
			return landed.State == wire.QueueLanded
		})
		task = append(task, landed.Updated.Sub(start))
		if tip := tb.git("rev-parse", "main"); tip != landed.Commit {
			b.Fatalf("main is at %s after landing %s", tip, landed.Commit)
		}
		b.StopTimer()
		tb.logEvents(name+"-1", start)
		b.Logf("%s/1: queued +%v, landed +%v", name, landed.Created.Sub(start).Round(time.Millisecond), landed.Updated.Sub(start).Round(time.Millisecond))

		// The same by hand for attempt 2.
		advance(name + "-b")
		b.StartTimer()
		start = time.Now()
		var steps []string
		step := func(what string, do func()) {
			s := time.Now()
			do()
			steps = append(steps, fmt.Sprintf("%s %v", what, time.Since(s).Round(time.Millisecond)))
		}
		sb, branch := name+"-2", "task/"+name+"/2"
		step("sync", func() { tb.h.Must("sync", sb) })
		step("checkout", func() { tb.git("checkout", "-q", "-b", "land-"+name, "refs/paddock/"+sb+"/"+branch) })
		step("rebase", func() { tb.git("rebase", "-q", "main") })
		cs := time.Now()
		step("check", func() {
			if out, err := exec.Command("sh", "-c", "cd \"$1\" && "+taskBenchCheck, "sh", tb.repo).CombinedOutput(); err != nil {
				b.Fatalf("the check by hand: %v %s", err, out)
			}
		})
		checks = append(checks, time.Since(cs))
		step("ff", func() {
			tb.git("checkout", "-q", "main")
			tb.git("merge", "-q", "--ff-only", "land-"+name)
		})
		hand = append(hand, time.Since(start))
		b.StopTimer()
		b.Logf("%s/2 by hand: %s", name, strings.Join(steps, ", "))
		tb.git("branch", "-q", "-D", "land-"+name)
		tb.h.Must("task", "rm", name)
		b.StartTimer()
	}
	b.StopTimer()
	t, h, c := median(task), median(hand), median(checks)
	b.ReportMetric(float64(t.Milliseconds()), "land-ms")
	b.ReportMetric(float64(h.Milliseconds()), "by-hand-ms")
	b.ReportMetric(float64(c.Milliseconds()), "check-ms")
	b.ReportMetric(float64(t)/float64(h), "x-by-hand")
	b.ReportMetric(float64(t-c)/float64(h-c), "x-excl-checks")
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

// runErr runs paddock and returns its output, or its failure as an error.
func (tb *taskBench) runErr(args ...string) (string, error) {
	out, errOut, code := tb.h.Run("", args...)
	if code != 0 {
		return "", fmt.Errorf("paddock %s: exit %d %s", strings.Join(args, " "), code, errOut)
	}
	return out, nil
}

// startByHand starts by hand what a task's attempt starts with: a sandbox of the
// repository made with `up`, a branch of its own, and a session started on the command
// with `chat --new`.
func (tb *taskBench) startByHand(sb, command string) error {
	for _, args := range [][]string{{"up", tb.repo, "--name", sb},
		{"exec", sb, "--", "git", "checkout", "-q", "-b", "task/" + sb},
		{"chat", sb, "--new", "shell", "--agent", "shell", "--command", command}} {
		if _, err := tb.runErr(args...); err != nil {
			return err
		}
	}
	return nil
}

// workTimes reads when the agent's command of taskBenchWork began and ended in sandbox
// sb (the sandbox's clock is the host's).
func (tb *taskBench) workTimes(sb string) (began, ended time.Time) {
	out := strings.Fields(tb.h.Must("exec", sb, "--", "sh", "-c", "cat work-*.txt"))
	if len(out) != 2 {
		tb.b.Fatalf("%s: the command's times: %q", sb, out)
	}
	at := func(ns string) time.Time {
		var n int64
		fmt.Sscan(ns, &n)
		return time.Unix(0, n)
	}
	return at(out[0]), at(out[1])
}

// logEvents logs, with -v, the recorded events of sandbox sb as times since start.
func (tb *taskBench) logEvents(sb string, start time.Time) {
	if !testing.Verbose() {
		return
	}
	var lines []string
	out, err := tb.runErr("events", "--sandbox", sb, "--no-follow", "--last", "50", "--json")
	if err != nil {
		return // no such sandbox (a task without a setup has no prepared base)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		json.Unmarshal([]byte(line), &ev)
		at, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(ev["time"]))
		lines = append(lines, fmt.Sprintf("+%v %v %v", at.Sub(start).Round(time.Millisecond), ev["kind"], ev["attrs"]))
	}
	tb.b.Logf("%s events:\n  %s", sb, strings.Join(lines, "\n  "))
}
