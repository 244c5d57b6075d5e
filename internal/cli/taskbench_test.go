package cli_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
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

// newTaskBench makes a taskBench, skipping b where bubblewrap is missing.
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
	oneAndFour(b, "sandbox", "sandboxes", run)
}

func taskStart(b *testing.B, extra ...string) {
	tb := newTaskBench(b)
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
	oneAndFour(b, "attempt", "attempts", run)
}

// oneAndFour times run with one and with four, b.N times, taking turns at which goes
// first, and reports the medians as ms/1-WHAT and ms/4-WHATS, and four's over one's as
// x-one.
func oneAndFour(b *testing.B, what, whats string, run func(name string, n int) time.Duration) {
	var one, four []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			one = append(one, run(fmt.Sprintf("one%d", i), 1))
			four = append(four, run(fmt.Sprintf("four%d", i), 4))
		} else {
			four = append(four, run(fmt.Sprintf("four%d", i), 4))
			one = append(one, run(fmt.Sprintf("one%d", i), 1))
		}
		b.Logf("iteration %d: one %s %v, four %v", i, what, one[i].Round(time.Millisecond), four[i].Round(time.Millisecond))
	}
	b.StopTimer()
	o, f := median(one), median(four)
	b.ReportMetric(float64(f.Milliseconds()), "ms/4-"+whats)
	b.ReportMetric(float64(o.Milliseconds()), "ms/1-"+what)
	b.ReportMetric(float64(f)/float64(o), "x-one")
}

// median is the middle of ds (the upper one of an even count): figures of a shared
// machine, where another's work may slow one iteration.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
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
