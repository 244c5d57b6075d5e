package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// The fake daemon's tasks, as the daemon keeps them: a landing is a queue entry, a landing
// of work that changes files that run code on the host is refused without yes, a review
// is recorded on its attempt.

func (f *fakeDaemon) Tasks(ctx context.Context) ([]wire.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wire.Task(nil), f.tasks...), nil
}

func (f *fakeDaemon) Queue(ctx context.Context, task string) ([]wire.QueueEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []wire.QueueEntry
	for _, e := range f.queue {
		if task == "" || e.Task == task {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeDaemon) LandTask(ctx context.Context, name string, req wire.LandRequest) (wire.QueueEntry, error) {
	f.record("land %s attempt=%d pr=%v yes=%v", name, req.Attempt, req.PR, req.Yes)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.tasks {
		if t.Name != name {
			continue
		}
		if f.runsOnHost != "" && !req.Yes {
			return wire.QueueEntry{}, apperr.Conflict("read them, then land again with --yes", "the work changes files that run code on this machine once landed: %s", f.runsOnHost)
		}
		e := wire.QueueEntry{ID: int64(len(f.queue) + 1), Task: name, Attempt: req.Attempt, Repo: t.Repo, Into: t.Branch, State: wire.QueueWaiting}
		f.queue = append(f.queue, e)
		return e, nil
	}
	return wire.QueueEntry{}, apperr.NotFound("", "no task named %q", name)
}

func (f *fakeDaemon) ReviewAttempt(ctx context.Context, name string, n int, req wire.ReviewRequest) (wire.Attempt, error) {
	f.record("review %s/%d %q", name, n, req.Message)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.tasks {
		for j := range f.tasks[i].Attempts {
			if a := &f.tasks[i].Attempts[j]; f.tasks[i].Name == name && a.N == n {
				a.Reviews = append(a.Reviews, wire.Review{File: req.File, Line: req.Line, Message: req.Message})
				return *a, nil
			}
		}
	}
	return wire.Attempt{}, apperr.NotFound("", "no attempt %s/%d", name, n)
}

func (f *fakeDaemon) DropEntry(ctx context.Context, id int64) (wire.QueueEntry, error) {
	f.record("drop %d", id)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.queue {
		if f.queue[i].ID == id {
			f.queue[i].State = wire.QueueDropped
			return f.queue[i], nil
		}
	}
	return wire.QueueEntry{}, apperr.NotFound("", "no queue entry %d", id)
}

// setQueueState moves a queue entry on, as the daemon's merge queue does.
func (f *fakeDaemon) setQueueState(id int64, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.queue {
		if f.queue[i].ID == id {
			f.queue[i].State = state
		}
	}
}

// sampleTask is a task of three attempts as the daemon ranks them: two passed their
// checks, the third failed one of them.
func sampleTask() wire.Task {
	yes, no := true, false
	now := time.Now()
	pass := []wire.CheckResult{{Command: "make test", Exit: 0}, {Command: "make lint", Exit: 0}}
	return wire.Task{Name: "fix-login", Repo: "/src/api", Base: "0123456789abcdef", Branch: "main", Prompt: "Fix the login bug",
		Checks: []string{"make test", "make lint"}, State: wire.TaskDone, Created: now.Add(-5 * time.Minute),
		Attempts: []wire.Attempt{
			{N: 1, Agent: "claude", Backend: "bwrap", Sandbox: "fix-login-1", Session: "claude", State: wire.AttemptDone, Passed: &yes, Checks: pass,
				Diff: wire.DiffStat{Files: 2, Insertions: 30, Deletions: 4}, Usage: wire.UsageSum{Requests: 3, CostUSD: 0.12},
				Started: now.Add(-4 * time.Minute), Ended: now.Add(-2 * time.Minute), Rank: 2, Why: "checks pass; larger diff than #3"},
			{N: 2, Agent: "claude", Backend: "bwrap", Sandbox: "fix-login-2", Session: "claude", State: wire.AttemptDone, Passed: &no,
				Checks: []wire.CheckResult{{Command: "make test", Exit: 2, Output: "--- FAIL: TestLogin\nwant 200, got 500\n"}, {Command: "make lint", Exit: 0}},
				Diff:   wire.DiffStat{Files: 1, Insertions: 3}, Started: now.Add(-4 * time.Minute), Ended: now.Add(-3 * time.Minute), Rank: 3, Why: "checks fail: make test"},
			{N: 3, Agent: "codex", Backend: "bwrap", Sandbox: "fix-login-3", Session: "codex", State: wire.AttemptDone, Passed: &yes, Checks: pass,
				Diff: wire.DiffStat{Files: 1, Insertions: 8, Deletions: 1}, Started: now.Add(-4 * time.Minute), Ended: now.Add(-1 * time.Minute),
				Verdict: &wire.Verdict{Judge: "gemini", Score: 8, Reason: "small and to the point"}, Rank: 1, Why: "checks pass; smallest diff"},
		}}
}

// TestTasksViewRanksAndLands: T shows the tasks with their attempts in rank order (rank,
// agent, checks, diff, why), the selected attempt's failing check's output beside them; l
// on a task lands its best after a yes, and the landing's state shows as the queue moves
// (a conflict with its files).
func TestTasksViewRanksAndLands(t *testing.T) {
	f := newFake()
	f.addSandbox("fix-login-1", "/src/api", "running")
	f.tasks = []wire.Task{sampleTask()}
	u := startTUI(t, f, nil, 200, 20)
	u.waitFor("fix-login-1")
	u.press("T")
	s := u.waitFor("paddock · tasks")
	task := lineWith(s, "fix-login done")
	for _, want := range []string{"3 attempts", "best #3 codex", "~$0.12", "5m"} {
		if !strings.Contains(task, want) {
			t.Errorf("the task's line lacks %q: %q", want, task)
		}
	}
	// In rank order: #1 codex, #2 claude (1), #3 claude (2).
	i1, i2, i3 := strings.Index(s, "#1 codex"), strings.Index(s, "#2 claude"), strings.Index(s, "#3 claude")
	if i1 < 0 || i2 < i1 || i3 < i2 {
		t.Fatalf("the attempts are not in rank order:\n%s", s)
	}
	if l := lineWith(s, "#1 codex"); !strings.Contains(l, "✓ 2/2") || !strings.Contains(l, "1 file +8 −1") || !strings.Contains(l, "judge 8/10") || !strings.Contains(l, "smallest diff") {
		t.Errorf("the best attempt's line: %q", l)
	}
	if l := lineWith(s, "#3 claude"); !strings.Contains(l, "✗ 1/2") || !strings.Contains(l, "checks fail: make test") {
		t.Errorf("the failing attempt's line: %q", l)
	}
	// The failing attempt's details: the end of its check's output.
	u.press("down", "down", "down")
	u.waitFor("✗ make test (exit 2)")
	u.waitFor("want 200, got 500")

	// l on the task's line lands its best, after a yes.
	u.press("g", "l")
	u.waitFor("Land attempt #3 (codex) of fix-login into main?")
	u.press("n")
	u.waitFor("cancelled")
	if got := f.callLog(); len(got) != 0 {
		t.Fatalf("calls before a yes: %q", got)
	}
	u.press("l")
	u.waitFor("Land attempt #3 (codex) of fix-login into main?")
	u.press("y")
	waitCalls(t, f, "land fix-login attempt=3 pr=false yes=false")
	u.waitFor("landing #3: waiting")
	// A conflict shows with its files beside the task, then the landing it ends in.
	f.mu.Lock()
	f.queue[0].State, f.queue[0].Conflicts, f.queue[0].Detail = wire.QueueConflict, []string{"login.go"}, "the rebase onto main conflicted; codex was told"
	f.mu.Unlock()
	u.waitFor("landing #3: conflict")
	u.waitFor("conflicts: login.go")
	u.waitFor("the rebase onto main conflicted; codex was told")
	f.setQueueState(1, wire.QueueLanded)
	u.waitFor("landing #3: landed") // read again while the view is open
	u.press("esc")
	u.waitFor("enter attach · n new")
}

// TestTasksViewAsksAgainForHostFiles: a landing the daemon refuses for files that run code
// on the host is asked about again, naming them, and sent with yes only on a second yes; r
// sends a review to the selected attempt's agent.
func TestTasksViewAsksAgainForHostFiles(t *testing.T) {
	f := newFake()
	f.tasks = []wire.Task{sampleTask()}
	f.runsOnHost = "Makefile (make runs its recipes)"
	u := startTUI(t, f, nil, 200, 20)
	u.waitFor("No sandboxes yet")
	u.press("T")
	u.waitFor("#3 claude")
	u.press("down", "down", "l") // #2: claude (1), passed
	u.waitFor("Land attempt #1 (claude) of fix-login into main?")
	u.press("y")
	u.waitFor("Makefile (make runs its recipes)")
	u.waitFor("Land anyway? [y/N]")
	u.press("y")
	waitCalls(t, f, "land fix-login attempt=1 pr=false yes=false", "land fix-login attempt=1 pr=false yes=true")
	u.waitFor("landing #1: waiting")

	u.press("r")
	u.waitFor("review to fix-login #1 (claude):")
	u.typeText("handle the empty password too")
	u.press("enter")
	waitCalls(t, f, "land fix-login attempt=1 pr=false yes=false", "land fix-login attempt=1 pr=false yes=true",
		`review fix-login/1 "handle the empty password too"`)
	u.waitFor("sent to fix-login #1 (claude)")
	u.waitFor("review: handle the empty password too")

	u.press("x")
	u.waitFor("Drop the landing of attempt #1 of fix-login (waiting)?")
	u.press("y")
	waitCalls(t, f, "land fix-login attempt=1 pr=false yes=false", "land fix-login attempt=1 pr=false yes=true",
		`review fix-login/1 "handle the empty password too"`, fmt.Sprintf("drop %d", 1))
	u.waitFor("landing #1: dropped")
}
