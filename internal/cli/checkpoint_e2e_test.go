package cli_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestCheckpointClaude drives the real Claude Code in a bwrap sandbox through four turns
// against the scripted model, one of which changes files by a Bash command (which Claude
// Code's own checkpoints miss): each turn leaves a checkpoint listed with its prompt; a
// turn's diff shows the shell's change; bisect finds the turn that broke a check without
// touching the workspace; a rewind to turn 2 puts back turn 2's files and makes Claude's
// next request carry the conversation up to turn 2 and nothing after; the rewind is
// undone; and a fork of turn 2 onto docker (bwrap without an engine) starts with turn 2's
// files and its Claude resumes turn 2's conversation.
func TestCheckpointClaude(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "claude")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	model := modeltest.NewAnthropic(t)
	h, repo := e2eHome(t)
	h.Setenv("ANTHROPIC_BASE_URL", model.URL())
	h.Setenv("ANTHROPIC_API_KEY", "sk-ant-ckpt-REAL-0123456789abcdefghijklmnop")
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo, "--agent", "claude")
	pane := func(sandbox string) string {
		return must("", "exec", sandbox, "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", "claude")
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _, _ := paddock("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", "claude")
			list, _, _ := paddock("", "checkpoints", "repo")
			t.Logf("Claude's screen at the end (the model had %d requests):\n%s\ncheckpoints:\n%s", len(model.Requests()), out, list)
			daemonLogTail(t, h.Dir, "claude")
		}
	})
	waitUntil(t, 90*time.Second, "Claude's prompt", func() bool { return strings.Contains(pane("repo"), "❯") })

	prompts := []string{
		"RUN: echo ok > /workspace/status.txt && echo one > /workspace/one.txt",
		"WRITE: /workspace/two.txt",
		"RUN: echo broken > /workspace/status.txt && rm /workspace/one.txt",
		"how is it going?",
	}
	states := map[int]string{} // the workspace after each turn
	for i, p := range prompts {
		seq := newestSeq(t, must, "repo/claude")
		must(p, "chat", "repo/claude")
		waitTurn(t, must, "repo/claude", i+1, seq, 90*time.Second)
		states[i+1] = must("", "exec", "repo", "--", "sh", "-c", workspaceState)
	}
	if got := must("", "exec", "repo", "--", "cat", "status.txt", "two.txt"); got != "broken\n"+modeltest.WriteContent {
		t.Fatalf("the turns' tools did not run: status.txt and two.txt hold %q", got)
	}

	// Each turn's checkpoint, listed with its prompt and what it changed.
	cps := checkpointsOf(t, must, "repo/claude")
	for n, p := range prompts {
		cp := turnCheckpoint(cps, n+1)
		if cp == nil || !strings.Contains(cp.Prompt, p[:min(len(p), 16)]) || cp.Conversation == nil || cp.Conversation.Blob == "" {
			t.Fatalf("turn %d's checkpoint: %+v\nall: %+v", n+1, cp, cps)
		}
	}
	// Each turn's conversation holds the turn whole, its answer too: Claude Code writes
	// its transcript a moment after its hook says the turn ended.
	for n, p := range prompts {
		conv := must("", "exec", "repo", "--", "git", "cat-file", "blob", turnCheckpoint(cps, n+1).Conversation.Blob)
		if answers := strings.Count(conv, "DONE: ") + strings.Count(conv, "ECHO: "); !strings.Contains(conv, p) || answers < n+1 {
			t.Errorf("turn %d's conversation lacks its prompt (%v) or its answer (%d answers)", n+1, strings.Contains(conv, p), answers)
		}
	}
	if cp := turnCheckpoint(cps, 3); cp.Files != 2 || cp.Deleted < 2 || cp.Added < 1 {
		t.Errorf("turn 3 changed status.txt and deleted one.txt; its checkpoint says %d files +%d -%d", cp.Files, cp.Added, cp.Deleted)
	}
	listing := must("", "checkpoints", "repo/claude")
	for _, want := range []string{"RUN: echo ok", "WRITE: /workspace/two.txt", "RUN: echo broken", "how is it going"} {
		if !strings.Contains(listing, want) {
			t.Fatalf("checkpoints repo/claude lacks %q:\n%s", want, listing)
		}
	}
	// The shell's change, as the turn's diff.
	diff := must("", "diff", "repo", "--turn", "3")
	for _, want := range []string{"-ok", "+broken", "status.txt", "deleted file", "one.txt"} {
		if !strings.Contains(diff, want) {
			t.Fatalf("diff repo --turn 3 lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, "two.txt") {
		t.Fatalf("diff repo --turn 3 shows turn 2's file:\n%s", diff)
	}

	// Bisect: the first turn after which status.txt no longer says ok is 3, found in
	// scratch copies, the agent's workspace as it was.
	var bisect wire.BisectResult
	if err := json.Unmarshal([]byte(must("", "bisect", "repo/claude", "--check", "grep -qx ok status.txt", "--json")), &bisect); err != nil {
		t.Fatal(err)
	}
	if bisect.FirstBad == nil || bisect.FirstBad.Turn != 3 || bisect.Good == nil || bisect.Good.Turn != 2 || !strings.Contains(bisect.FirstBad.Prompt, "echo broken") || !strings.Contains(bisect.Diff, "+broken") {
		t.Fatalf("bisect: %+v", bisect)
	}
	if now := must("", "exec", "repo", "--", "sh", "-c", workspaceState); now != states[4] {
		t.Fatalf("bisect changed the workspace:\nbefore:\n%s\nafter:\n%s", states[4], now)
	}

	// Rewind to turn 2: its files, and Claude resumes at turn 2's end.
	rw := rewindTo(t, must, "repo/claude", "2")
	if now := must("", "exec", "repo", "--", "sh", "-c", workspaceState); now != states[2] {
		t.Fatalf("after the rewind to turn 2 the workspace is not turn 2's:\nturn 2:\n%s\nnow:\n%s", states[2], now)
	}
	waitUntil(t, 90*time.Second, "Claude's prompt after the rewind", func() bool { return strings.Contains(pane("repo"), "❯") })
	seq := newestSeq(t, must, "repo/claude")
	r := nextRequest(t, must, model, "repo/claude", "after the rewind", 90*time.Second)
	// Turn 2 whole, its answer too (Claude Code writes that a moment after its turn ends).
	if err := inOrder(r, "RUN: echo ok", "WRITE: /workspace/two.txt", "DONE:", "after the rewind"); err != nil {
		t.Fatalf("the request after the rewind lacks turns 1 and 2: %v", err)
	}
	if r.Contains("echo broken") || r.Contains("how is it going") {
		t.Fatalf("the request after the rewind to turn 2 carries turn 3 or 4: %+v", r.Messages)
	}

	// Undo: turn 4's files and conversation again, without the turn after the rewind.
	// The turn after the rewind is turn 3 again (Claude's restart is no turn).
	if cp := waitTurn(t, must, "repo/claude", 3, seq, 90*time.Second); !strings.Contains(cp.Prompt, "after the rewind") {
		t.Fatalf("the checkpoint of the turn after the rewind, turn 3, has prompt %q", cp.Prompt)
	}
	rewindTo(t, must, "repo/claude", rw.Undo.Name)
	if now := must("", "exec", "repo", "--", "sh", "-c", workspaceState); now != states[4] {
		t.Fatalf("after the undo the workspace is not turn 4's:\nturn 4:\n%s\nnow:\n%s", states[4], now)
	}
	waitUntil(t, 90*time.Second, "Claude's prompt after the undo", func() bool { return strings.Contains(pane("repo"), "❯") })
	r = nextRequest(t, must, model, "repo/claude", "after the undo", 90*time.Second)
	if err := inOrder(r, "RUN: echo ok", "echo broken", "how is it going", "ECHO: how is it going", "after the undo"); err != nil {
		t.Fatalf("the request after the undo lacks turns 1 to 4: %v", err)
	}
	if r.Contains("after the rewind") {
		t.Fatal("the request after the undo carries the turn the undo took back")
	}

	// Fork turn 2 onto docker: turn 2's files, and its Claude resumes turn 2's conversation.
	backend := "bwrap"
	if dockerReady() {
		backend = "docker"
	}
	var fork wire.ForkResult
	if err := json.Unmarshal([]byte(must("", "fork", "repo/claude@2", "forked", "--backend", backend, "--json")), &fork); err != nil {
		t.Fatal(err)
	}
	if len(fork.Sandboxes) != 1 || fork.Sandboxes[0] != "forked" || fork.From.Turn != 2 {
		t.Fatalf("fork: %+v", fork)
	}
	if ls := must("", "ls"); !strings.Contains(ls, backend) {
		t.Fatalf("the fork is not on %s:\n%s", backend, ls)
	}
	// (Beneath /workspace: the directory's own mode is the backend's, 0700 on bwrap.)
	beneath := func(state string) string { _, rest, _ := strings.Cut(state, "\n"); return rest }
	if now := must("", "exec", "forked", "--", "sh", "-c", workspaceState); beneath(now) != beneath(states[2]) {
		t.Fatalf("the fork's workspace is not turn 2's:\nturn 2:\n%s\nfork:\n%s", states[2], now)
	}
	waitUntil(t, 90*time.Second, "the fork's Claude at its prompt", func() bool { return strings.Contains(pane("forked"), "❯") })
	r = nextRequest(t, must, model, "forked/claude", "in the fork", 90*time.Second)
	if err := inOrder(r, "RUN: echo ok", "WRITE: /workspace/two.txt", "DONE:", "in the fork"); err != nil {
		t.Fatalf("the fork's request lacks turns 1 and 2: %v", err)
	}
	if r.Contains("echo broken") || r.Contains("after the undo") {
		t.Fatal("the fork's request carries turns after turn 2")
	}
	// Nothing of the fork's reaches its parent's workspace.
	if _, _, code := paddock("", "exec", "repo", "--", "test", "-f", "one.txt"); code == 0 {
		t.Fatal("the parent's workspace has turn 2's one.txt back after the fork")
	}
	nothingInside(t, must, "ckpt-REA[L]", "the real key")
}

// codexCheckpoints runs on TestCodexEndToEnd's session repo/codex, several turns in: a
// turn that changes a file by a shell command leaves a checkpoint whose diff shows it,
// and a rewind to the session's first turn puts that file back and makes Codex's next
// request carry the first turn and nothing after it.
func codexCheckpoints(t *testing.T, must mustRun, model scriptedModel) {
	defer func() {
		if t.Failed() {
			t.Logf("checkpoints:\n%s", must("", "checkpoints", "repo/codex"))
		}
	}()
	waitUntil(t, 60*time.Second, "the restarted turn's checkpoint", func() bool {
		for _, cp := range checkpointsOf(t, must, "repo/codex") {
			if strings.Contains(cp.Prompt, "after the restart") {
				return true
			}
		}
		return false
	})
	cps := checkpointsOf(t, must, "repo/codex")
	first, last := cps[0], cps[len(cps)-1]
	for _, cp := range cps {
		if cp.Kind == wire.CheckpointTurn && strings.Contains(cp.Prompt, "RUN: id -un") {
			first = cp
		}
	}
	if first.Turn != 1 || first.Conversation == nil || first.Conversation.Agent != "codex" {
		t.Fatalf("Codex's first turn's checkpoint: %+v\nall: %+v", first, cps)
	}
	must("RUN: echo changed > /workspace/codex.txt", "chat", "repo/codex")
	changed := waitTurn(t, must, "repo/codex", last.Turn+1, last.Seq, 60*time.Second)
	if diff := must("", "diff", "repo", "--turn", fmt.Sprint(changed.Turn)); !strings.Contains(diff, "-agent") || !strings.Contains(diff, "+changed") {
		t.Fatalf("diff of the turn that changed codex.txt:\n%s", diff)
	}
	rewindTo(t, must, "repo/codex", "1")
	if out := must("", "exec", "repo", "--", "cat", "/workspace/codex.txt"); out != "agent\n" {
		t.Fatalf("after the rewind to turn 1 codex.txt holds %q", out)
	}
	r := nextRequest(t, must, model, "repo/codex", "after the codex rewind", 90*time.Second)
	if err := inOrder(r, "RUN: id -un", "after the codex rewind"); err != nil {
		t.Fatalf("the request after the rewind lacks turn 1: %v", err)
	}
	if r.Contains("echo changed") || r.Contains("status please") || r.Contains("after the restart") {
		t.Fatalf("the request after the rewind to turn 1 carries later turns: %+v", r.Messages)
	}
}

// TestCheckpointKill kills the daemon (kill -9) at random points of a checkpoint, a
// rewind and a fork of a shell session's sandbox. After each the daemon comes back and
// finds the old state or the new, never half: every listed checkpoint's commit is whole
// in the sandbox; the workspace is one checkpoint's or the other's, and a rewind that
// took effect has its undo point listed; a fork left no sandbox or a whole one. The same
// operation tried again then succeeds.
func TestCheckpointKill(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	h, repo := e2eHome(t)
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	kill := func() { killWait(t, clitest.DaemonPID(h.Dir)) }
	t.Cleanup(func() {
		if t.Failed() {
			data, _ := os.ReadFile(filepath.Join(h.Dir, "state", "daemon.log"))
			for _, l := range strings.Split(string(data), "\n") {
				if strings.Contains(l, "rewind") || strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
					t.Log(l)
				}
			}
		}
	})
	must("", "up", repo)
	must("", "chat", "repo", "--new", "w", "--agent", "shell", "--command", "sleep 100000")
	state := func(sandbox string) string { return must("", "exec", sandbox, "--", "sh", "-c", workspaceState) }
	// settled is the workspace once nothing changes it any more: a script the daemon
	// ran in the sandbox goes on after the daemon is killed.
	settled := func(sandbox string) string {
		var last string
		waitUntil(t, 30*time.Second, "the workspace of "+sandbox+" to settle", func() bool {
			now, _, code := paddock("", "exec", sandbox, "--", "sh", "-c", workspaceState)
			if code != 0 || now != last {
				last = now
				return false
			}
			return true
		})
		return last
	}
	// Two checkpoints 400 files apart: a and b.
	must("", "exec", "repo", "--", "sh", "-c", "for i in $(seq 400); do echo a$i > f$i.txt; done")
	must("", "checkpoint", "repo", "--session", "w", "--name", "a")
	stateA := state("repo")
	must("", "exec", "repo", "--", "sh", "-c", "for i in $(seq 400); do echo b$i > f$i.txt; done; rm f1*.txt; mkdir -p sub && echo new > sub/new.txt && git add -A && git commit -qm b")
	must("", "checkpoint", "repo", "--session", "w", "--name", "b")
	stateB := state("repo")
	began := time.Now()
	must("", "rewind", "repo/w", "--to", "a")
	took := time.Since(began)
	if state("repo") != stateA {
		t.Fatal("an uncut rewind to a did not put a's workspace back")
	}
	t.Logf("a rewind of 400 files took %v", took.Round(time.Millisecond))
	wholeCheckpoints := func(run int) []wire.Checkpoint {
		t.Helper()
		cps := checkpointsOf(t, must, "repo/w")
		for _, cp := range cps {
			out, _, code := paddock("", "exec", "repo", "--", "sh", "-c", fmt.Sprintf("git cat-file -e %s^{tree} && git rev-parse refs/paddock/checkpoints/%d", cp.Commit, cp.Seq))
			if code != 0 || strings.TrimSpace(out) != cp.Commit {
				t.Fatalf("run %d: checkpoint #%d is listed but its commit %s is not whole in the sandbox (%q)", run, cp.Seq, cp.Commit, out)
			}
		}
		return cps
	}

	target, from := map[string]string{"a": stateA, "b": stateB}, "a"
	for i := range 2 {
		cut := func(within time.Duration, args ...string) {
			done := make(chan int, 1)
			go func() { _, _, code := paddock("", args...); done <- code }()
			time.Sleep(time.Duration(rand.Int64N(int64(within) + 1)))
			kill()
			<-done
		}
		// A checkpoint cut short.
		must("", "exec", "repo", "--", "sh", "-c", fmt.Sprintf("echo change%d > change%d.txt", i, i))
		before := len(wholeCheckpoints(i))
		cut(took, "checkpoint", "repo", "--session", "w")
		after := len(wholeCheckpoints(i))
		must("", "checkpoint", "repo", "--session", "w")
		if n := len(wholeCheckpoints(i)); n != after+1 || after > before+1 {
			t.Fatalf("run %d: %d checkpoints before the cut one, %d after it, %d after one more", i, before, after, n)
		}
		must("", "exec", "repo", "--", "sh", "-c", fmt.Sprintf("rm change%d.txt", i))

		// A rewind cut short: from's workspace or to's, and to's with its undo point.
		to := map[string]string{"a": "b", "b": "a"}[from]
		undos := countUndos(wholeCheckpoints(i))
		cut(took, "rewind", "repo/w", "--to", to)
		switch now := settled("repo"); now {
		case target[from]:
			t.Logf("run %d: the rewind cut short left %s's workspace", i, from)
		case target[to]:
			t.Logf("run %d: the rewind cut short had put back %s's workspace", i, to)
			if countUndos(wholeCheckpoints(i)) != undos+1 {
				t.Fatalf("run %d: the rewind to %s took effect, but no undo point of it is listed", i, to)
			}
			// The daemon that comes back finishes it: the agent it stopped runs again
			// and the rewind's mark is gone, with nothing asked of the user.
			waitUntil(t, 60*time.Second, "the daemon to finish the rewind cut short", func() bool {
				list, _, _ := paddock("", "chat", "repo", "--list")
				_, _, marked := paddock("", "exec", "repo", "--", "sh", "-c", `test -f "$(git rev-parse --git-path paddock/rewind)"`)
				return strings.Contains(list, "repo/w") && !strings.Contains(list, "exited") && marked != 0
			})
		default:
			t.Fatalf("run %d: a rewind from %s to %s cut short left a workspace of neither:\n%s", i, from, to, now)
		}
		must("", "rewind", "repo/w", "--to", to)
		if state("repo") != target[to] {
			t.Fatalf("run %d: the rewind to %s tried again did not finish it", i, to)
		}
		if list := must("", "chat", "repo", "--list"); !strings.Contains(list, "repo/w") || strings.Contains(list, "exited") {
			t.Fatalf("run %d: after the rewind the session is not running:\n%s", i, list)
		}
		from = to

		// A fork cut short: no sandbox, or a whole one.
		name := fmt.Sprintf("f%d", i)
		cut(3*took, "fork", "repo/w@a", name)
		if _, _, code := paddock("", "exec", name, "--", "true"); code == 0 {
			t.Logf("run %d: the fork cut short left sandbox %s", i, name)
			if got := settled(name); got != stateA {
				t.Fatalf("run %d: a fork cut short left sandbox %s with a workspace that is not a's:\n%s", i, name, got)
			}
			if list := must("", "chat", name, "--list"); !strings.Contains(list, name+"/w") || strings.Contains(list, "exited") {
				t.Fatalf("run %d: a fork cut short left sandbox %s without its session running:\n%s", i, name, list)
			}
			must("", "rm", name, "--force")
		} else if ls := must("", "ls"); strings.Contains(ls, name) {
			t.Fatalf("run %d: a fork cut short left sandbox %s that does not answer:\n%s", i, name, ls)
		}
		must("", "fork", "repo/w@a", name)
		if got := state(name); got != stateA {
			t.Fatalf("run %d: the fork tried again has a workspace that is not a's:\n%s", i, got)
		}
		must("", "rm", name, "--force")
	}
}

// countUndos counts the undo points of rewinds among cps.
func countUndos(cps []wire.Checkpoint) int {
	n := 0
	for _, cp := range cps {
		if cp.Kind == wire.CheckpointRewind {
			n++
		}
	}
	return n
}

// checkpointsOf is `paddock checkpoints TARGET --json`.
func checkpointsOf(t *testing.T, must mustRun, target string) []wire.Checkpoint {
	t.Helper()
	var cps []wire.Checkpoint
	if err := json.Unmarshal([]byte(must("", "checkpoints", target, "--json")), &cps); err != nil {
		t.Fatalf("checkpoints %s --json: %v", target, err)
	}
	return cps
}

// turnCheckpoint is the newest checkpoint of turn n among cps, nil when there is none.
func turnCheckpoint(cps []wire.Checkpoint, n int) *wire.Checkpoint {
	for i := len(cps) - 1; i >= 0; i-- {
		if cps[i].Kind == wire.CheckpointTurn && cps[i].Turn == n {
			return &cps[i]
		}
	}
	return nil
}

// newestSeq is the Seq of target's newest checkpoint, 0 when it has none.
func newestSeq(t *testing.T, must mustRun, target string) int {
	t.Helper()
	if cps := checkpointsOf(t, must, target); len(cps) > 0 {
		return cps[len(cps)-1].Seq
	}
	return 0
}

// waitTurn waits for target's checkpoint of turn n taken after checkpoint #newest (once
// the agent has ended that turn) and returns it.
func waitTurn(t *testing.T, must mustRun, target string, n, newest int, wait time.Duration) wire.Checkpoint {
	t.Helper()
	var found wire.Checkpoint
	waitUntil(t, wait, fmt.Sprintf("the checkpoint of %s's turn %d", target, n), func() bool {
		cp := turnCheckpoint(checkpointsOf(t, must, target), n)
		if cp == nil || cp.Seq <= newest {
			return false
		}
		found = *cp
		return true
	})
	return found
}

// rewindTo is `paddock rewind TARGET --to TO --json`.
func rewindTo(t *testing.T, must mustRun, target, to string) wire.RewindResult {
	t.Helper()
	var rw wire.RewindResult
	if err := json.Unmarshal([]byte(must("", "rewind", target, "--to", to, "--json")), &rw); err != nil {
		t.Fatalf("rewind %s --to %s --json: %v", target, to, err)
	}
	if rw.Undo.Name == "" || rw.Undo.Kind != wire.CheckpointRewind {
		t.Fatalf("rewind %s --to %s: no undo point: %+v", target, to, rw)
	}
	return rw
}

// nextRequest types msg into session target and returns the model's request for it: the
// conversation's own, not an agent's request for a title.
func nextRequest(t *testing.T, must mustRun, model scriptedModel, target, msg string, wait time.Duration) modeltest.Request {
	t.Helper()
	before := len(model.Requests())
	must(msg, "chat", target)
	var req modeltest.Request
	waitUntil(t, wait, "the request of "+msg, func() bool {
		for _, r := range model.Requests()[before:] {
			if r.Contains(msg) && len(r.Messages) > 1 && !titleRequest(r) {
				req = r
				return true
			}
		}
		return false
	})
	return req
}

// claudeRewindFirstTurn runs on claudeEndToEndIn's session repo/claude, several turns in,
// once the turn of the message last has its checkpoint: a turn that removes whoami.txt
// by a Bash command, which bisect finds; then a rewind to turn 1 (the turn that wrote it) puts the file back
// and makes Claude's next request carry turn 1 and nothing after it. Every wait is slow
// times longer.
func claudeRewindFirstTurn(t *testing.T, must mustRun, model scriptedModel, last string, slow time.Duration) {
	t.Helper()
	waitUntil(t, slow*60*time.Second, "the checkpoint of the turn of "+last, func() bool {
		cps := checkpointsOf(t, must, "repo/claude")
		return len(cps) > 0 && strings.Contains(cps[len(cps)-1].Prompt, last)
	})
	seq := newestSeq(t, must, "repo/claude")
	cps := checkpointsOf(t, must, "repo/claude")
	if first := turnCheckpoint(cps, 1); first == nil || !strings.Contains(first.Prompt, "RUN: id -un") {
		t.Fatalf("turn 1's checkpoint: %+v\nall: %+v", first, cps)
	}
	turns := cps[len(cps)-1].Turn
	must("RUN: rm /workspace/whoami.txt", "chat", "repo/claude")
	waitTurn(t, must, "repo/claude", turns+1, seq, slow*60*time.Second)
	if out := must("", "exec", "repo", "--", "sh", "-c", "test -e /workspace/whoami.txt && echo present || echo gone"); out != "gone\n" {
		t.Fatal("the Bash call did not remove whoami.txt")
	}
	// Bisect finds that turn: the first after which whoami.txt is gone.
	var bisect wire.BisectResult
	if err := json.Unmarshal([]byte(must("", "bisect", "repo/claude", "--check", "test -f whoami.txt", "--json")), &bisect); err != nil {
		t.Fatal(err)
	}
	if bisect.FirstBad == nil || bisect.FirstBad.Turn != turns+1 || !strings.Contains(bisect.FirstBad.Prompt, "rm /workspace/whoami.txt") {
		t.Fatalf("bisect, turn %d removed whoami.txt: %+v", turns+1, bisect)
	}
	rewindTo(t, must, "repo/claude", "1")
	if out := must("", "exec", "repo", "--", "cat", "/workspace/whoami.txt"); out != "agent\n/workspace\n" {
		t.Fatalf("after the rewind to turn 1 whoami.txt holds %q", out)
	}
	r := nextRequest(t, must, model, "repo/claude", "after the rewind to turn 1", slow*60*time.Second)
	if err := inOrder(r, "RUN: id -un", "after the rewind to turn 1"); err != nil {
		t.Fatalf("the request after the rewind lacks turn 1: %v", err)
	}
	if r.Contains("what is the status?") || r.Contains("rm /workspace/whoami.txt") {
		t.Fatalf("the request after the rewind to turn 1 carries later turns: %+v", r.Messages)
	}
}

// daemonLogTail logs the lines of the daemon's log of home that mention word (its last 40).
func daemonLogTail(t *testing.T, home, word string) {
	data, _ := os.ReadFile(filepath.Join(home, "state", "daemon.log"))
	var lines []string
	for l := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(l, word) {
			lines = append(lines, l)
		}
	}
	t.Logf("the daemon's log on %s:\n%s", word, strings.Join(lines[max(0, len(lines)-40):], "\n"))
}

// forkOutOf forks turn 1 of repo/claude (after claudeRewindFirstTurn) onto bwrap as
// sandbox "out": the fork has turn 1's whoami.txt and its Claude resumes turn 1's
// conversation. Every wait is slow times longer.
func forkOutOf(t *testing.T, must mustRun, model scriptedModel, slow time.Duration) {
	t.Helper()
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	var fork wire.ForkResult
	if err := json.Unmarshal([]byte(must("", "fork", "repo/claude@1", "out", "--backend", "bwrap", "--json")), &fork); err != nil {
		t.Fatal(err)
	}
	if len(fork.Sessions) != 1 || fork.From.Turn != 1 {
		t.Fatalf("fork: %+v", fork)
	}
	if out := must("", "exec", "out", "--", "cat", "/workspace/whoami.txt"); out != "agent\n/workspace\n" {
		t.Fatalf("the fork's whoami.txt holds %q", out)
	}
	waitUntil(t, slow*60*time.Second, "the fork's Claude at its prompt", func() bool {
		return strings.Contains(must("", "exec", "out", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", fork.Sessions[0]), "❯")
	})
	r := nextRequest(t, must, model, "out/"+fork.Sessions[0], "in the fork out of it", slow*60*time.Second)
	if err := inOrder(r, "RUN: id -un", "in the fork out of it"); err != nil {
		t.Fatalf("the fork's request lacks turn 1: %v", err)
	}
	if r.Contains("what is the status?") || r.Contains("after the rewind to turn 1") {
		t.Fatalf("the fork's request carries turns after turn 1: %+v", r.Messages)
	}
}
