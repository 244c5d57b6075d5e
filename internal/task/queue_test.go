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
)

// workByAttempt makes each attempt's work, by its branch (task/NAME/N): every one makes
// the check pass; the first changes the greeting and adds a git hook, the second adds a
// file of its own, the third changes the greeting's line as the first does.
const workByAttempt = `echo 42 > answer
case "$(git branch --show-current)" in
*/1) echo "hello from one" > greeting; mkdir -p .githooks; printf '#!/bin/sh\ntouch hook-ran\n' > .githooks/post-merge; chmod +x .githooks/post-merge ;;
*/2) echo two > two.txt ;;
*/3) echo "hello from three" > greeting ;;
esac
git add -A && git -c user.name=agent -c user.email=agent@example.com commit -qm "work of $(git branch --show-current)"`

// Three attempts landed through the merge queue into a real host repository whose
// hooks live in .githooks: the first only with --yes, its hook named and never run; the
// second refused by the checks once rebased onto a host commit that breaks them, then,
// the host fixed, rebased onto the first and landed (the daemon killed while its checks
// ran: the queue finishes it); the third conflicts with the first on the greeting's
// line and waits, the host branch untouched, until dropped.
func TestLandThroughTheQueue(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.write("greeting", "hello\n")
	h.git("-C", h.repo, "add", "greeting")
	h.hostCommit("a greeting")

	tk, err := h.tasks.Create(ctx, wire.TaskCreateRequest{Name: "land", Repo: h.repo, Prompt: workByAttempt,
		Attempts: []wire.AttemptSpec{{Agent: "shell"}, {Agent: "shell"}, {Agent: "shell"}}, Checks: []string{"sleep 1; sh check.sh"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.wait(tk.Name, "every attempt checked", func(t wire.Task) bool { return t.State == wire.TaskDone })
	h.git("-C", h.repo, "config", "core.hooksPath", ".githooks")

	// The first attempt's hook: refused without --yes, naming it, with nothing queued.
	_, err = h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 1})
	if apperr.KindOf(err) != apperr.KindInvalid || !strings.Contains(err.Error(), ".githooks/post-merge") || !strings.Contains(apperr.HintOf(err), "--yes") {
		t.Fatalf("landing work that adds a git hook without --yes: %v (hint %q)", err, apperr.HintOf(err))
	}
	if es, _ := h.tasks.Queue(ctx, tk.Name); len(es) != 0 {
		t.Fatalf("a refused landing queued %+v", es)
	}
	e1, err := h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 1, Yes: true})
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

	// Landed again: the daemon is killed while the checks run on the rebased work.
	e2, err = h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 2})
	if err != nil {
		t.Fatal(err)
	}
	h.waitEntry(e2.ID, wire.QueueChecking)
	h.restart()
	e2 = h.waitEntry(e2.ID, wire.QueueLanded)
	log := h.out("log", "--format=%s", "main")
	if h.tip() != e2.Commit || !strings.HasPrefix(log, "work of task/land/2\nRevert") || !strings.Contains(log, "work of task/land/1\n") ||
		h.out("rev-list", "--min-parents=2", "main") != "" || h.out("rev-parse", e2.Commit+"^") != fixed {
		t.Fatalf("the second landing is not rebased onto the first, linear: main %s, entry %+v, log:\n%s", h.tip(), e2, log)
	}
	if h.read("two.txt") != "two\n" || h.read("greeting") != "hello from one\n" {
		t.Errorf("after the second landing: two.txt %q, greeting %q", h.read("two.txt"), h.read("greeting"))
	}

	// The third conflicts with the first on the greeting: the host is untouched.
	before := h.tip()
	e3, err := h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 3})
	if err != nil {
		t.Fatal(err)
	}
	e3 = h.waitEntry(e3.ID, wire.QueueConflict)
	if h.tip() != before || len(e3.Conflicts) != 1 || e3.Conflicts[0] != "greeting" || !strings.Contains(e3.Detail, "work of task/land/1") {
		t.Fatalf("a conflicting landing: main %s (was %s), entry %+v", h.tip(), before, e3)
	}
	if _, err := h.tasks.Land(ctx, tk.Name, wire.LandRequest{Attempt: 3}); apperr.KindOf(err) != apperr.KindConflict {
		t.Errorf("landing an attempt waiting in the queue again: %v", err)
	}
	if d, err := h.tasks.Drop(ctx, e3.ID); err != nil || d.State != wire.QueueDropped {
		t.Fatalf("drop: %+v %v", d, err)
	}
	if h.tip() != before {
		t.Errorf("main moved after the drop")
	}
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
		if !e.Open() && e.ID != 0 {
			h.t.Fatalf("entry %d ended %s, not %s: %+v", id, e.State, state, e)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.t.Fatalf("entry %d did not become %s within 2 minutes: %+v", id, state, e)
	return e
}
