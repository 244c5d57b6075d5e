package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/snapshot/storage/miniotest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// workspaceState is what a user would notice of /workspace: every path with its mode,
// type and link target, every file's content, the git status and HEAD.
const workspaceState = `cd /workspace && find . -path ./.git -prune -o -printf '%p %m %y %l\n' | LC_ALL=C sort &&
find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum &&
git status --porcelain=v1 && git rev-parse --abbrev-ref HEAD && git rev-parse HEAD && git for-each-ref --format='%(refname) %(objectname)' refs/heads`

// TestSnapshotClaudeOntoDocker: a Claude session works on bwrap; a snapshot goes to a
// real MinIO; the sandbox is removed; restore makes it again on docker, where Claude
// resumes its conversation (the model server sees the earlier messages) and the
// working tree is exactly as it was. The store's keys never enter a sandbox.
func TestSnapshotClaudeOntoDocker(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	modeltest.RequireCLI(t, "claude")
	if !dockerReady() {
		testenv.Missing(t, "no docker engine with the paddock/sandbox image", "make setup")
	}
	endpoint := miniotest.Start(t)
	miniotest.Bucket(t, endpoint, "snaps")
	model := modeltest.NewAnthropic(t)
	h, repo := e2eHome(t)
	home := h.Dir
	h.Setenv("AWS_ACCESS_KEY_ID", miniotest.User)
	h.Setenv("AWS_SECRET_ACCESS_KEY", miniotest.Password)
	h.Setenv("ANTHROPIC_BASE_URL", model.URL())
	h.Setenv("ANTHROPIC_API_KEY", "sk-ant-snap-REAL-0123456789abcdefghijklmnop")
	config := "[backup]\nstore = \"s3://snaps/paddock\"\nendpoint = \"" + endpoint + "\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo, "--agent", "claude")
	pane := func() string {
		return must("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", "claude")
	}
	waitUntil(t, 60*time.Second, "Claude's prompt", func() bool { return strings.Contains(pane(), "❯") })
	must("RUN: echo remembered > /workspace/memo.txt", "chat", "repo/claude")
	waitUntil(t, 60*time.Second, "the turn to end", func() bool {
		_, _, code := paddock("", "exec", "repo", "--", "test", "-f", "/workspace/memo.txt")
		return code == 0 && strings.Contains(must("", "chat", "repo", "--list"), "idle")
	})
	// The rest of the day's work: a commit on a branch, a change, an untracked file with a
	// space, modes, a symlink, an empty directory git does not keep, a deliverable.
	must("", "exec", "repo", "--", "sh", "-c", `git checkout -q -b work && git add memo.txt && git commit -q -m "agent: memo" &&
echo more >> memo.txt && echo draft > "draft notes.txt" && printf '#!/bin/sh\necho hi\n' > tool.sh && chmod 750 tool.sh &&
chmod 600 "draft notes.txt" && ln -s memo.txt latest && mkdir -p deliverables && echo result > deliverables/result.txt`)
	before := must("", "exec", "repo", "--", "sh", "-c", workspaceState)

	id := strings.TrimSpace(must("", "snapshot", "repo", "--note", "end of day"))
	if list := must("", "snapshots", "--json"); !strings.Contains(list, id) || !strings.Contains(list, "end of day") {
		t.Fatalf("snapshots does not list %s:\n%s", id, list)
	}
	must("", "rm", "repo", "--force")
	must("", "restore", id, "--backend", "docker")
	if out := must("", "ls"); !strings.Contains(out, "docker") {
		t.Fatalf("the restored sandbox is not on docker:\n%s", out)
	}
	if after := must("", "exec", "repo", "--", "sh", "-c", workspaceState); after != before {
		t.Fatalf("the workspace differs after the restore:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// Claude resumes the conversation: its next request carries the earlier turn.
	waitUntil(t, 90*time.Second, "Claude's prompt after the restore", func() bool { return strings.Contains(pane(), "❯") })
	n := len(model.Requests())
	must("after the restore", "chat", "repo/claude")
	waitUntil(t, 90*time.Second, "the resumed conversation's request", func() bool {
		for _, r := range model.Requests()[n:] {
			if r.Contains("after the restore") && r.Contains("echo remembered") {
				return true
			}
		}
		return false
	})

	// The store's keys are nowhere in the sandbox.
	nothingInside(t, must, "paddock-test-secre[t]", "the store's secret key")
}
