package task_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/guestclient"
)

// workByAttempt makes each attempt's work, by its branch (task/NAME/N): every one makes
// the check pass; the first changes the greeting and adds a git hook, the second adds a
// file of its own and leaves its work uncommitted, the third changes the greeting's
// line as the first does, the fourth adds a file of its own.
const workByAttempt = `echo 42 > answer
case "$(git branch --show-current)" in
*/1) echo "hello from one" > greeting; mkdir -p .githooks; printf '#!/bin/sh\ntouch hook-ran\n' > .githooks/post-merge; chmod +x .githooks/post-merge ;;
*/2) echo two > two.txt ;;
*/3) echo "hello from three" > greeting ;;
*/4) echo four > four.txt ;;
esac
case "$(git branch --show-current)" in
*/2) ;;
*) git add -A && git -c user.name=agent -c user.email=agent@example.com commit -qm "work of $(git branch --show-current)" ;;
esac`

// Four attempts landed through the merge queue into a real host repository whose
// hooks live in .githooks: the first only with --yes, its hook named and never run, and
// not over uncommitted changes in the host's checkout; the
// second (its work left uncommitted, which the landing commits) refused by the checks
// once rebased onto a host commit that breaks them; the third conflicts with the first
// on the greeting's line and holds main's queue, the host untouched, until the conflict
// is resolved in its sandbox, while the fourth lands on another branch; the second,
// queued behind it (dropped and queued again), then lands rebased onto it, undoing a
// rebase of the queue's own left cut short in its sandbox, the daemon killed while its
// checks ran: the queue finishes it.
func TestLandThroughTheQueue(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.write("greeting", "hello\n")
	h.git("-C", h.repo, "add", "greeting")
	h.hostCommit("a greeting")
	h.git("-C", h.repo, "config", "core.hooksPath", ".githooks")

	tk, err := h.tasks.Create(ctx, wire.TaskCreateRequest{Name: "land", Repo: h.repo, Prompt: workByAttempt,
		Attempts: []wire.AttemptSpec{{Agent: "shell"}, {Agent: "shell"}, {Agent: "shell"}, {Agent: "shell"}}, Checks: []string{"sleep 1; sh check.sh"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.wait(tk.Name, "every attempt checked", func(t wire.Task) bool { return t.State == wire.TaskDone })

	// The first attempt's hook: refused without --yes, naming it, with nothing queued.
	_, err = h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 1})
	if apperr.KindOf(err) != apperr.KindInvalid || !strings.Contains(err.Error(), ".githooks/post-merge") || !strings.Contains(apperr.HintOf(err), "--yes") {
		t.Fatalf("landing work that adds a git hook without --yes: %v (hint %q)", err, apperr.HintOf(err))
	}
	if es, _ := h.tasks.Queue(ctx, tk.Name); len(es) != 0 {
		t.Fatalf("a refused landing queued %+v", es)
	}
	// Not under the host's own uncommitted changes to main's checkout.
	h.write("greeting", "hello, mine\n")
	e1, err := h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 1, Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if e1 = h.waitEntry(e1.ID, wire.QueueFailed); !strings.Contains(e1.Detail, "uncommitted changes") || !strings.Contains(e1.Detail, "greeting") ||
		h.tip() != tk.Base || h.read("greeting") != "hello, mine\n" {
		t.Fatalf("landing on a checkout with uncommitted changes: main %s, greeting %q, entry %+v", h.tip(), h.read("greeting"), e1)
	}
	h.git("-C", h.repo, "checkout", "greeting")
	e1, err = h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 1, Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	e1 = h.waitEntry(e1.ID, wire.QueueLanded)
	if tip := h.tip(); tip != e1.Commit || h.read("greeting") != "hello from one\n" {
		t.Fatalf("after the first landing main is at %s (entry says %s), greeting %q", tip, e1.Commit, h.read("greeting"))
	}
	if _, err := os.Stat(filepath.Join(h.repo, "hook-ran")); err == nil {
		t.Fatal("the attempt's post-merge hook ran on the host")
	}
	if _, err := os.Stat(filepath.Join(h.repo, ".githooks/post-merge")); err != nil {
		t.Fatalf("the landed work is not checked out on the host: %v", err)
	}
	if got := h.must(tk.Name).State; got != wire.TaskLanded {
		t.Errorf("the task is %s after a landing", got)
	}

	// A host commit that breaks the second attempt's checks once rebased onto it.
	h.write("check.sh", "test ! -f two.txt || { echo two.txt is not wanted; exit 1; }\n")
	h.git("-C", h.repo, "add", "check.sh")
	broke := h.hostCommit("no two.txt")
	e2, err := h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 2})
	if err != nil {
		t.Fatal(err)
	}
	e2 = h.waitEntry(e2.ID, wire.QueueFailed)
	if h.tip() != broke || !strings.Contains(e2.Detail, "two.txt is not wanted") || !strings.Contains(e2.Detail, "sh check.sh") {
		t.Fatalf("checks failing on the rebased work: main at %s (want %s untouched), entry %+v", h.tip(), broke, e2)
	}
	h.git("-C", h.repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "revert", "--no-edit", "HEAD")
	fixed := h.tip()

	// The third conflicts with the first on the greeting: the host is untouched, and
	// the branch's later entries wait behind it.
	e3, err := h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 3})
	if err != nil {
		t.Fatal(err)
	}
	e3 = h.waitEntry(e3.ID, wire.QueueConflict)
	if h.tip() != fixed || len(e3.Conflicts) != 1 || e3.Conflicts[0] != "greeting" || !strings.Contains(e3.Detail, "work of task/land/1") {
		t.Fatalf("a conflicting landing: main %s (was %s), entry %+v", h.tip(), fixed, e3)
	}
	// A daemon stopped while it told the agent (the entry left telling) tells it again
	// on its restart: the entry is tried again from the rebase, not left waiting on an
	// answer to a message its agent never got.
	h.stop()
	e3.Telling, e3.Detail = true, "cut short while telling"
	if err := h.st.UpdateQueueEntry(ctx, e3); err != nil {
		t.Fatal(err)
	}
	h.start()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		e := h.entry(e3.ID)
		if e.State == wire.QueueConflict && !e.Telling && strings.Contains(e.Detail, "its agent could not be told") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an entry left telling after a restart: %+v", e)
		}
	}
	if _, err := h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 3}); apperr.KindOf(err) != apperr.KindConflict {
		t.Errorf("landing an attempt waiting in the queue again: %v", err)
	}
	e2, err = h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 2})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if e := h.entry(e2.ID); e.State != wire.QueueWaiting {
		t.Fatalf("an entry behind a conflict is %s, not waiting", e.State)
	}
	if d, err := h.tasks.Drop(ctx, e2.ID); err != nil || d.State != wire.QueueDropped {
		t.Fatalf("drop: %+v %v", d, err)
	}
	if _, err := h.tasks.Drop(ctx, e2.ID); apperr.KindOf(err) != apperr.KindConflict {
		t.Errorf("dropping a dropped entry: %v", err)
	}
	e2, err = h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 2})
	if err != nil {
		t.Fatalf("landing a dropped attempt again: %v", err)
	}

	// Another branch's queue is not held by main's: the fourth lands on release, which
	// is not checked out, while main's waits.
	h.git("-C", h.repo, "branch", "release", tk.Base)
	e4, err := h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 4, Into: "release"})
	if err != nil {
		t.Fatal(err)
	}
	e4 = h.waitEntry(e4.ID, wire.QueueLanded)
	if h.out("rev-parse", "release") != e4.Commit || h.out("rev-parse", e4.Commit+"^") != tk.Base || h.tip() != fixed || h.read("four.txt") != "" {
		t.Fatalf("landing on release: release %s, main %s (was %s), entry %+v", h.out("rev-parse", "release"), h.tip(), fixed, e4)
	}
	if e := h.entry(e2.ID); e.State != wire.QueueWaiting {
		t.Fatalf("main's entry behind a conflict is %s, not waiting", e.State)
	}

	// The second's sandbox left mid-rebase by the queue (as a daemon killed during its
	// rebase leaves it): its next landing undoes that rebase, not the agent's.
	h.exec(attemptSandbox(tk, 2), `gd=$(git rev-parse --absolute-git-dir)
git switch -q -c stuck HEAD~1 && echo other > two.txt && git add two.txt && git commit -qm stuck && git switch -q task/land/2
! git rebase stuck >/dev/null 2>&1 && test -d "$gd/rebase-merge" && touch "$gd/paddock-rebasing"`)

	// The conflict resolved in the sandbox (its shell agent could not be told): the
	// queue tries again and lands it, then the second, rebased onto it; the daemon is
	// killed while the checks run on the second's rebased work.
	h.exec(attemptSandbox(tk, 3), `git rebase paddock/onto >/dev/null 2>&1 || { echo "hello from one and three" > greeting; git add greeting; GIT_EDITOR=true git rebase --continue; }`)
	e3 = h.waitEntry(e3.ID, wire.QueueLanded)
	if h.read("greeting") != "hello from one and three\n" || h.out("rev-parse", e3.Commit+"^") != fixed {
		t.Fatalf("the resolved conflict landed as %+v, greeting %q", e3, h.read("greeting"))
	}
	h.waitEntry(e2.ID, wire.QueueChecking)
	h.restart()
	e2 = h.waitEntry(e2.ID, wire.QueueLanded)
	log := h.out("log", "--format=%s", "main")
	if h.tip() != e2.Commit || !strings.HasPrefix(log, "The attempt's uncommitted work\nwork of task/land/3\nRevert") || !strings.Contains(log, "work of task/land/1\n") ||
		h.out("rev-list", "--min-parents=2", "main") != "" || h.out("rev-parse", e2.Commit+"^") != e3.Commit {
		t.Fatalf("the second landing is not rebased onto the third, linear: main %s, entry %+v, log:\n%s", h.tip(), e2, log)
	}
	if h.read("two.txt") != "two\n" || h.must(tk.Name).State != wire.TaskLanded {
		t.Errorf("after the last landing: two.txt %q, task %s", h.read("two.txt"), h.must(tk.Name).State)
	}
}

// attemptSandbox is the sandbox of a task's attempt n.
func attemptSandbox(t wire.Task, n int) string {
	for _, a := range t.Attempts {
		if a.N == n {
			return a.Sandbox
		}
	}
	return ""
}

// exec runs a script in a sandbox's /workspace.
func (h *harness) exec(sandboxName, script string) {
	h.t.Helper()
	c, err := h.sandboxes.Client(context.Background(), sandboxName)
	if err != nil {
		h.t.Fatal(err)
	}
	out, errOut, code, err := c.Output(context.Background(), guestclient.ExecOptions{Argv: []string{"sh", "-c", script}}, 1<<16)
	if err != nil || code != 0 {
		h.t.Fatalf("in %s: %s: exit %d %v: %s%s", sandboxName, script, code, err, out, errOut)
	}
}

// entry reads a merge queue entry.
func (h *harness) entry(id int64) wire.QueueEntry {
	h.t.Helper()
	es, _ := h.tasks.Queue(context.Background(), "")
	for _, e := range es {
		if e.ID == id {
			return e
		}
	}
	h.t.Fatalf("no entry %d", id)
	return wire.QueueEntry{}
}

// hostCommit commits what is staged in the host repository and returns the commit.
func (h *harness) hostCommit(msg string) string {
	h.t.Helper()
	h.git("-C", h.repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", msg)
	return h.tip()
}

// tip is the host's main.
func (h *harness) tip() string { return h.out("rev-parse", "main") }

// out runs git in the host repository and returns its output, trimmed.
func (h *harness) out(args ...string) string {
	h.t.Helper()
	out, err := exec.Command("git", append([]string{"-C", h.repo}, args...)...).Output()
	if err != nil {
		h.t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// read reads a file of the host's work tree.
func (h *harness) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(h.repo, name))
	return string(b)
}

// must returns a task.
func (h *harness) must(name string) wire.Task {
	h.t.Helper()
	t, err := h.tasks.Get(context.Background(), name)
	if err != nil {
		h.t.Fatal(err)
	}
	return t
}

// waitEntry polls a merge queue entry until it is in state.
func (h *harness) waitEntry(id int64, state string) wire.QueueEntry {
	h.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var e wire.QueueEntry
	for time.Now().Before(deadline) {
		es, _ := h.tasks.Queue(context.Background(), "")
		for _, x := range es {
			if x.ID == id {
				e = x
			}
		}
		if e.State == state {
			return e
		}
		if e.ID != 0 && !e.Open() {
			h.t.Fatalf("entry %d is %s, not %s: %+v", id, e.State, state, e)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.t.Fatalf("entry %d did not become %s within 2 minutes: %+v", id, state, e)
	return e
}
