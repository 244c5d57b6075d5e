package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestMergeQueueTellsTheAgent: a plain sandbox's branch put through the merge queue
// (merge --queue) conflicts with what the host committed meanwhile; the conflict goes to
// the sandbox's Claude Code session as its next message, the agent rebases onto
// paddock/onto and resolves it, and the queue lands the result, checked, on a linear
// main.
func TestMergeQueueTellsTheAgent(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "claude")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	model := modeltest.NewAnthropic(t)
	// The queue's message names the file in conflict: the agent rebases as it is told
	// and keeps both sides.
	model.RunOn("conflicts in a.txt", `git rebase paddock/onto; printf 'both\n' > a.txt; git add a.txt && GIT_EDITOR=true git rebase --continue`)
	h, repo := e2eHome(t)
	h.Setenv("ANTHROPIC_BASE_URL", model.URL())
	h.Setenv("ANTHROPIC_API_KEY", "sk-ant-mergequeue-0123456789abcdefghijklmnop")
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a\n")
	git("add", "a.txt")
	git("commit", "-q", "-m", "host: add a")

	must("", "up", repo, "--agent", "claude", "--prompt", `RUN: printf 'sandbox\n' > a.txt && git commit -qam 'agent: change a'`)
	waitIdle(t, paddock, "repo")
	write("host\n")
	git("commit", "-qam", "host: change a")
	hostTip := git("rev-parse", "main")

	_, errOut, code := paddock("", "merge", "repo", "--queue", "--run", "grep -qx both a.txt", "--wait")
	if code != 4 || !strings.Contains(errOut, "conflicts with main") {
		t.Fatalf("merge --queue --wait, its work conflicting with main: exit %d\n%s", code, errOut)
	}
	if tip := git("rev-parse", "main"); tip != hostTip {
		t.Fatalf("main moved to %s on a conflict", tip)
	}
	var e wire.QueueEntry
	waitUntil(t, 2*time.Minute, "the agent's answer landed", func() bool {
		var es []wire.QueueEntry
		if json.Unmarshal([]byte(must("", "task", "queue", "--json")), &es) != nil || len(es) != 1 {
			return false
		}
		e = es[0]
		return !e.Open()
	})
	if e.State != wire.QueueLanded || e.Session != "claude" {
		t.Fatalf("the entry ended %s (told session %q): %s", e.State, e.Session, e.Detail)
	}
	told := false
	for _, r := range model.Requests() {
		told = told || r.Contains("conflicts in a.txt") && r.Contains("paddock/onto")
	}
	if !told {
		t.Error("the agent was never told of the conflict on a.txt")
	}
	if got := git("log", "-3", "--format=%s"); got != "agent: change a\nhost: change a\nhost: add a" {
		t.Errorf("main's log after the landing:\n%s", got)
	}
	if got := git("log", "-1", "--format=%P"); strings.Contains(got, " ") {
		t.Errorf("main's tip is a merge commit (%s), not a fast-forward", got)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "both\n" {
		t.Errorf("a.txt in the host's work tree: %q", b)
	}
}
