package task_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/paddockhq/paddock/internal/agents/all"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/bwrap"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/events/eventlog"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/proxy/creds"
	"github.com/paddockhq/paddock/internal/proxy/keyring"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/task"
	"github.com/paddockhq/paddock/internal/testenv"
)

// harness is the daemon's services in-process over real bwrap sandboxes, with the task
// service restartable over the same state.
type harness struct {
	t         *testing.T
	st        *store.Store
	evlog     *eventlog.Log
	sandboxes *sandbox.Service
	sessions  *session.Service
	repo      string

	tasks  *task.Service
	cancel context.CancelFunc
	// log is what the task service logged, shown when the test fails.
	log lockedBuffer
}

// lockedBuffer is a buffer the service's goroutines write to at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx := context.Background()
	dir := testenv.ShortTempDir(t)
	b, err := bwrap.New(backend.Env{Dir: filepath.Join(dir, "sb")})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Available(ctx); err != nil {
		testenv.Missing(t, fmt.Sprintf("bwrap is not available (%v)", err), "apt-get install bubblewrap")
	}
	testenv.Program(t, "tmux", "apt-get install tmux")
	path, err := testenv.SmallGuest()
	if err != nil {
		t.Fatal(err)
	}
	guest, err := sandbox.InstallGuest(path, filepath.Join(dir, "guest"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	evlog := eventlog.New(eventlog.Options{Store: st, Logger: log})
	svc := sandbox.New(sandbox.Options{Store: st, Events: evlog, Backends: map[string]backend.Backend{"bwrap": b},
		DefaultBackend: "bwrap", Guest: guest, Logger: log})
	// The credential proxy's providers, with no key: an attempt of an agent that needs
	// one cannot start.
	providers, err := creds.Providers(nil, func(string) string { return "" }, filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	keys := keyring.New(creds.New(providers, nil, log))
	h := &harness{t: t, st: st, evlog: evlog, sandboxes: svc, sessions: session.New(svc, keys, log),
		repo: filepath.Join(dir, "repo")}
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("the task service's log:\n%s", h.log.String())
		}
		// Whatever a failing test left running.
		sbs, _ := st.ListSandboxes(context.Background())
		for _, sb := range sbs {
			svc.Remove(context.Background(), sb.Name, sandbox.RemoveOptions{Force: true, Purge: true}, nil, nil)
		}
		svc.Close()
		st.Close()
	})
	h.git("init", "-q", "-b", "main", h.repo)
	h.write("check.sh", "a=$(cat answer 2>/dev/null); echo \"the answer is ${a:-missing}\"; test \"$a\" = 42\n")
	h.git("-C", h.repo, "add", "-A")
	h.git("-C", h.repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "a project with a check")
	h.start()
	return h
}

func (h *harness) git(args ...string) {
	h.t.Helper()
	if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
		h.t.Fatalf("git %v: %v %s", args, err, out)
	}
}

func (h *harness) write(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.repo, name), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// start makes a task service over the state, as the daemon's start does.
func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.tasks = task.New(ctx, task.Options{Sandboxes: h.sandboxes, Sessions: h.sessions, Store: h.st,
		Bus: h.evlog.Bus(), Emit: h.evlog.Emit, Logger: slog.New(slog.NewTextHandler(&h.log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	h.tasks.Start(ctx)
	h.cancel = cancel
}

// stop stops the task service at once, wherever it is, as a daemon killed would.
func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		h.tasks.Wait()
		h.cancel = nil
	}
}

// restart stops the task service and starts a new one over the same state.
func (h *harness) restart() {
	h.stop()
	h.start()
}

// wait polls the task until ok accepts it.
func (h *harness) wait(name, what string, ok func(wire.Task) bool) wire.Task {
	h.t.Helper()
	return h.waitFor(3*time.Minute, name, what, ok)
}

// waitFor is wait for at most d.
func (h *harness) waitFor(d time.Duration, name, what string, ok func(wire.Task) bool) wire.Task {
	h.t.Helper()
	deadline := time.Now().Add(d)
	for {
		t, err := h.tasks.Get(context.Background(), name)
		if err == nil && ok(t) {
			return t
		}
		if err == nil && t.State == wire.TaskFailed {
			h.t.Fatalf("task %s failed while waiting for %s: %s %+v", name, what, t.Error, t.Attempts)
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("task %s: %s did not happen within %v: %+v (%v)", name, what, d, t, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readFile reads a file of a sandbox's /workspace.
func (h *harness) readFile(sandboxName, name string) string {
	h.t.Helper()
	c, err := h.sandboxes.Client(context.Background(), sandboxName)
	if err != nil {
		h.t.Fatal(err)
	}
	b, err := c.ReadFileMax(context.Background(), inside.Workspace, name, 1<<20)
	if err != nil {
		h.t.Fatalf("read %s in %s: %v", name, sandboxName, err)
	}
	return string(b)
}

// answerByAttempt writes a different answer in each attempt's branch (task/NAME/N):
// the second attempt's makes the check pass, the first's does not.
const answerByAttempt = `case "$(git branch --show-current)" in */2) echo 42 > answer;; *) echo 41 > answer;; esac; git add answer && git commit -qm answer`

// A task whose two attempts do different work: the one whose checks pass ranks first,
// the checks' output says why the other failed, the setup ran once and each attempt
// has what it made, and the events a user is notified of were sent.
func TestTaskAttemptsCheckedAndRanked(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	var mu sync.Mutex
	var kinds []string
	sub := h.evlog.Bus().Subscribe(64, func(ev events.Event) bool { return strings.HasPrefix(ev.Kind, "task-") })
	defer sub.Close()
	go func() {
		for ev := range sub.C() {
			mu.Lock()
			kinds = append(kinds, ev.Kind)
			mu.Unlock()
		}
	}()
	// A third attempt's agent has no key (Claude Code, with no Anthropic key here): it
	// cannot start, and the others go on.
	attempts := []wire.AttemptSpec{{Agent: "shell"}, {Agent: "shell"}, {Agent: "claude"}}
	tk, err := h.tasks.Create(ctx, wire.TaskCreateRequest{Repo: h.repo, Prompt: answerByAttempt,
		Attempts: attempts, Checks: []string{"sh check.sh"},
		Setup: "head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \\n' >> setup.out; echo >> setup.out"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Name != "case-git-branch-show-current" || tk.State != wire.TaskPreparing || len(tk.Attempts) != len(attempts) {
		t.Fatalf("created %+v", tk)
	}
	done := h.wait(tk.Name, "every attempt checked", func(t wire.Task) bool { return t.State == wire.TaskDone })
	best := done.Best()
	if best == nil || best.N != 2 || best.Passed == nil || !*best.Passed || best.Head == "" || best.Dirty {
		t.Fatalf("the attempt whose checks pass is not ranked first: %+v", done.Attempts)
	}
	if best.Diff != (wire.DiffStat{Files: 1, Insertions: 1}) || best.CheckRuns != 1 || best.Branch != "task/"+tk.Name+"/2" {
		t.Errorf("the best attempt's work: %+v", best)
	}
	var worst wire.Attempt
	for _, a := range done.Attempts {
		switch {
		case a.N == 1:
			worst = a
		case a.N == 3 && (a.State != wire.AttemptFailed || a.Rank != 3 || !strings.Contains(a.Error, "key") ||
			!strings.HasPrefix(a.Why, "could not start")):
			t.Errorf("the attempt whose agent is not installed: %+v", a)
		}
	}
	if worst.Rank != 2 || worst.Passed == nil || *worst.Passed || len(worst.Checks) != 1 ||
		worst.Checks[0].Exit != 1 || !strings.Contains(worst.Checks[0].Output, "the answer is 41") {
		t.Errorf("the failing attempt: %+v", worst)
	}
	// The setup ran once, in the prepared base: both attempts have its one line, and
	// what it made is no attempt's work (the diffs above leave it out).
	one, two := h.readFile(worst.Sandbox, "setup.out"), h.readFile(best.Sandbox, "setup.out")
	if strings.Count(one, "\n") != 1 || one != two {
		t.Errorf("setup.out: attempt 1 has %q, attempt 2 %q: not one run's output copied into both", one, two)
	}
	if _, err := h.st.GetSandbox(ctx, tk.Name+"-base"); err == nil {
		t.Errorf("the prepared base %s-base is still there", tk.Name)
	}
	mu.Lock()
	got := strings.Join(kinds, " ")
	mu.Unlock()
	for _, k := range []string{task.EventAttemptPassed, task.EventAttemptFailed, task.EventTaskDone} {
		if !strings.Contains(got, k) {
			t.Errorf("no %s event; events: %s", k, got)
		}
	}
}

// A request that cannot make a task is refused with nothing made: no task, no sandbox.
func TestTaskCreateRefusesBadRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	shell := []wire.AttemptSpec{{Agent: "shell"}}
	notRepo := t.TempDir()
	if _, err := h.tasks.Create(ctx, wire.TaskCreateRequest{Name: "taken", Repo: notRepo, Prompt: "x", Attempts: shell}, nil); err == nil {
		t.Fatal("a directory that is no repository was taken")
	}
	for _, c := range []struct {
		name string
		req  wire.TaskCreateRequest
		kind apperr.Kind
		says string
	}{
		{"no prompt", wire.TaskCreateRequest{Repo: h.repo, Prompt: "  ", Attempts: shell}, apperr.KindInvalid, "needs a prompt"},
		{"no attempt", wire.TaskCreateRequest{Repo: h.repo, Prompt: "x"}, apperr.KindInvalid, "at least one attempt"},
		{"too many", wire.TaskCreateRequest{Repo: h.repo, Prompt: "x", Attempts: make([]wire.AttemptSpec, 9)}, apperr.KindInvalid, "too many"},
		{"unknown agent", wire.TaskCreateRequest{Repo: h.repo, Prompt: "x", Attempts: []wire.AttemptSpec{{Agent: "nosuch"}}}, apperr.KindInvalid, "nosuch"},
		{"an agent whose turns' ends are not seen", wire.TaskCreateRequest{Repo: h.repo, Prompt: "x", Attempts: []wire.AttemptSpec{{Agent: "shell"}, {Agent: "aider"}}}, apperr.KindInvalid, "cannot tell when aider ends its turn"},
		{"unknown backend", wire.TaskCreateRequest{Repo: h.repo, Prompt: "x", Attempts: []wire.AttemptSpec{{Agent: "shell", Backend: "nosuch"}}}, apperr.KindInvalid, "unknown backend"},
		{"empty check", wire.TaskCreateRequest{Repo: h.repo, Prompt: "x", Attempts: shell, Checks: []string{" "}}, apperr.KindInvalid, "check 1 is empty"},
		{"unknown judge", wire.TaskCreateRequest{Repo: h.repo, Prompt: "x", Attempts: shell, Judge: "nosuch"}, apperr.KindInvalid, "judge"},
		{"relative repo", wire.TaskCreateRequest{Repo: "repo", Prompt: "x", Attempts: shell}, apperr.KindInvalid, "absolute path"},
		{"no repo", wire.TaskCreateRequest{Repo: notRepo, Prompt: "x", Attempts: shell}, apperr.KindInvalid, "not a git repository"},
		{"no such base", wire.TaskCreateRequest{Repo: h.repo, Base: "nosuch", Prompt: "x", Attempts: shell}, apperr.KindInvalid, "no commit"},
		{"an option as base", wire.TaskCreateRequest{Repo: h.repo, Base: "--output=/tmp/x", Prompt: "x", Attempts: shell}, apperr.KindInvalid, "not a commit"},
		{"bad name", wire.TaskCreateRequest{Name: "a/b", Repo: h.repo, Prompt: "x", Attempts: shell}, apperr.KindInvalid, "invalid"},
		{"bad branch", wire.TaskCreateRequest{Branch: "a..b", Repo: h.repo, Prompt: "x", Attempts: shell}, apperr.KindInvalid, "branch"},
	} {
		_, err := h.tasks.Create(ctx, c.req, nil)
		if apperr.KindOf(err) != c.kind || err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: got %v (%s), want a %s error saying %q", c.name, err, apperr.KindOf(err), c.kind, c.says)
		}
	}
	for _, c := range []struct {
		name string
		req  wire.ReviewRequest
	}{
		{"no message", wire.ReviewRequest{Message: " "}},
		{"an absolute file", wire.ReviewRequest{File: "/etc/passwd", Message: "x"}},
		{"a file outside", wire.ReviewRequest{File: "a/../../x", Message: "x"}},
		{"a line of no file", wire.ReviewRequest{Line: 3, Message: "x"}},
	} {
		if _, err := h.tasks.Review(ctx, "nosuch", 1, c.req); apperr.KindOf(err) != apperr.KindInvalid {
			t.Errorf("review with %s: got %v, want it refused", c.name, err)
		}
	}
	ts, _ := h.st.ListTasks(ctx)
	sbs, _ := h.st.ListSandboxes(ctx)
	if len(ts) != 0 || len(sbs) != 0 {
		t.Errorf("refused requests left %d tasks and %d sandboxes", len(ts), len(sbs))
	}

	// A setup that fails fails the task, saying what it wrote, and leaves no sandbox.
	tk, err := h.tasks.Create(ctx, wire.TaskCreateRequest{Repo: h.repo, Prompt: "true", Attempts: shell,
		Setup: "echo cannot fetch the dependencies >&2; exit 3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var failed wire.Task
	h.waitFor(3*time.Minute, tk.Name, "the setup failed", func(t wire.Task) bool { failed = t; return t.State == wire.TaskFailed })
	if !strings.Contains(failed.Error, "exit 3") || !strings.Contains(failed.Error, "cannot fetch the dependencies") ||
		failed.Attempts[0].State != wire.AttemptFailed {
		t.Errorf("a task whose setup failed: %+v", failed)
	}
	if sbs, _ := h.st.ListSandboxes(ctx); len(sbs) != 0 {
		t.Errorf("a failed setup left sandboxes: %+v", sbs)
	}
}

// A daemon killed while a task is prepared, and again while its checks run, finishes
// it once started again; removing the task then leaves no sandbox and no task.
func TestTaskSurvivesRestartsAndIsRemoved(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	tk, err := h.tasks.Create(ctx, wire.TaskCreateRequest{Name: "resumed", Repo: h.repo,
		Prompt: "echo 42 > answer", Attempts: []wire.AttemptSpec{{Agent: "shell"}},
		Checks: []string{"sleep 1; sh check.sh"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.restart() // while it is prepared
	h.wait(tk.Name, "the checks running", func(t wire.Task) bool { return t.Attempts[0].State == wire.AttemptChecking })
	h.restart() // while its checks run
	done := h.wait(tk.Name, "every attempt checked", func(t wire.Task) bool { return t.State == wire.TaskDone })
	a := done.Attempts[0]
	if a.Passed == nil || !*a.Passed || a.CheckRuns != 1 || a.Diff.Files != 1 || !a.Dirty {
		t.Fatalf("the attempt after two restarts: %+v", a)
	}
	// What the agent spent is the attempt's cost; what its judge spent is not.
	sb, err := h.st.GetSandbox(ctx, a.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.st.AddMeteredCalls(ctx, []store.MeteredCall{
		{Time: time.Now(), SandboxID: sb.ID, Sandbox: sb.Name, Session: a.Session, Provider: "anthropic", Status: 200, CostUSD: 0.25, Priced: true},
		{Time: time.Now(), SandboxID: sb.ID, Sandbox: sb.Name, Session: "judge", Provider: "anthropic", Status: 200, CostUSD: 0.5, Priced: true},
	}); err != nil {
		t.Fatal(err)
	}
	// A commit after the agent's turn (here by hand) is checked again.
	c, err := h.sandboxes.Client(ctx, a.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	if out, _, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", "git add answer && git commit -qm answer"}}, 4096); err != nil || code != 0 {
		t.Fatalf("commit in the attempt's sandbox: exit %d %v %s", code, err, out)
	}
	again := h.wait(tk.Name, "the new commit checked", func(t wire.Task) bool { return t.Attempts[0].CheckRuns == 2 })
	if b := again.Attempts[0]; b.Head == a.Head || b.Dirty || b.Diff.Files != 1 || b.State != wire.AttemptDone ||
		b.Usage.Requests != 1 || b.Usage.CostUSD != 0.25 {
		t.Errorf("after a commit: %+v", b)
	}
	// Killed after the last check, before the task was said done: its start says it.
	h.stop()
	left, err := h.st.GetTask(ctx, tk.Name)
	if err != nil {
		t.Fatal(err)
	}
	left.State = wire.TaskRunning
	if err := h.st.PutTask(ctx, left); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.wait(tk.Name, "the task said done", func(t wire.Task) bool { return t.State == wire.TaskDone })
	if err := h.tasks.Remove(ctx, tk.Name, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.tasks.Get(ctx, tk.Name); apperr.KindOf(err) != apperr.KindNotFound {
		t.Errorf("the task is still there after its removal: %v", err)
	}
	if sbs, _ := h.st.ListSandboxes(ctx); len(sbs) != 0 {
		t.Errorf("sandboxes left after the task's removal: %+v", sbs)
	}
}

// A review goes to the attempt's agent as its next message (here a command reading one
// line), is kept with the attempt, and the end of the turn it starts checks the work.
func TestTaskReviewGoesToTheAgent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	tk, err := h.tasks.Create(ctx, wire.TaskCreateRequest{Name: "reviewed", Repo: h.repo,
		Prompt:   `IFS= read -r line && printf '%s\n' "$line" > review.txt && git add review.txt && git commit -qm review`,
		Attempts: []wire.AttemptSpec{{Agent: "shell"}}, Checks: []string{"test -s review.txt"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.wait(tk.Name, "the agent at work", func(t wire.Task) bool { return t.State == wire.TaskRunning })
	a, err := h.tasks.Review(ctx, tk.Name, 1, wire.ReviewRequest{File: "./src/main.go", Line: 3, Message: "use a constant"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Reviews) != 1 || a.Reviews[0].File != "src/main.go" || a.State != wire.AttemptWorking || !a.Ended.IsZero() {
		t.Errorf("the attempt after its review: %+v", a)
	}
	// At the turn's end, not at the next look at the attempts still working (every 30 s).
	done := h.waitFor(20*time.Second, tk.Name, "the reviewed work checked", func(t wire.Task) bool { return t.State == wire.TaskDone })
	if b := done.Attempts[0]; b.Passed == nil || !*b.Passed || b.Dirty || b.Diff.Files != 1 {
		t.Errorf("the reviewed attempt: %+v", b)
	}
	if got := h.readFile(tk.Name+"-1", "review.txt"); got != "Review of your work on src/main.go line 3: use a constant\n" {
		t.Errorf("the agent was sent %q", got)
	}
}

// A daemon killed after an attempt's session was made but before its prompt went (left
// here as such a kill leaves it: the task preparing, the attempt starting, its session
// at work on something else) starts the session again with the prompt.
func TestTaskRestartSendsAPromptCutShort(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	tk, err := h.tasks.Create(ctx, wire.TaskCreateRequest{Name: "cut", Repo: h.repo, Prompt: "echo 42 > answer",
		Attempts: []wire.AttemptSpec{{Agent: "shell"}}, Checks: []string{"sh check.sh"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.wait(tk.Name, "every attempt checked", func(t wire.Task) bool { return t.State == wire.TaskDone })
	h.stop()
	a := tk.Attempts[0]
	if err := h.sessions.Remove(ctx, a.Sandbox, a.Session); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sessions.Create(ctx, a.Sandbox, session.CreateRequest{Name: a.Session, Agent: "shell", Command: "rm answer; sleep 600"}); err != nil {
		t.Fatal(err)
	}
	cut, err := h.st.GetTask(ctx, tk.Name)
	if err != nil {
		t.Fatal(err)
	}
	cut.State, cut.Attempts[0] = wire.TaskPreparing, wire.Attempt{N: a.N, Agent: a.Agent, Backend: a.Backend,
		Sandbox: a.Sandbox, Session: a.Session, Branch: a.Branch, State: wire.AttemptStarting}
	if err := h.st.PutTask(ctx, cut); err != nil {
		t.Fatal(err)
	}
	h.start()
	done := h.wait(tk.Name, "the attempt started again and checked", func(t wire.Task) bool { return t.State == wire.TaskDone })
	if b := done.Attempts[0]; b.Passed == nil || !*b.Passed || b.CheckRuns != 1 {
		t.Errorf("the attempt started again: %+v", b)
	}
}
