package checkpoint

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/agents/claude"
	_ "github.com/paddockhq/paddock/internal/agents/codex"
	_ "github.com/paddockhq/paddock/internal/agents/shell"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestTakeScript: a checkpoint's commit holds the workspace as it is (a change, an
// untracked file; not an ignored file, nor a path [checkpoints] exclude names) and,
// through its parent, the conversation's transcript; its message reads back as its
// record; the agent's index does not move; the turn's prompt comes from the
// transcript's tail; and an end of a turn that changed nothing records nothing.
func TestTakeScript(t *testing.T) {
	testenv.Program(t, "git", "install git")
	c, _ := guesttest.Connect(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "workspace")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, nil, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, ".gitignore"), "build/\n")
	write(t, filepath.Join(dir, "a.txt"), "one\ntwo\n")
	gitIn(t, dir, nil, "add", "-A")
	gitIn(t, dir, nil, "commit", "-q", "-m", "first")
	head := gitIn(t, dir, nil, "rev-parse", "HEAD")
	write(t, filepath.Join(dir, "a.txt"), "one\n2\nthree\n")
	write(t, filepath.Join(dir, "new.txt"), "new\n")
	write(t, filepath.Join(dir, "build", "out"), "ignored\n")
	write(t, filepath.Join(dir, "data", "big"), "excluded\n")
	src, err := os.ReadFile("../transcript/testdata/claude.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	transcript := filepath.Join(home, "projects", "w", "id.jsonl")
	write(t, transcript, string(src))

	s := New(Options{Exclude: []string{"data/"}})
	cp := wire.Checkpoint{Seq: 1, Sandbox: "sb", Session: "main", Turn: 1, Kind: wire.CheckpointTurn, Time: time.Unix(1700000000, 0).UTC()}
	conv := &wire.Conversation{Agent: "claude", ResumeID: "id"}
	out, err := s.runTakeIn(ctx, c, dir, cp, conv, "", "", "", false, filepath.Join(home, "projects", "*", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tree := gitIn(t, dir, nil, "ls-tree", "-r", "--name-only", out.commit)
	if tree != ".gitignore\na.txt\nnew.txt" {
		t.Errorf("the checkpoint's files are\n%s\nwant .gitignore, a.txt, new.txt (not build/out, nor data/big)", tree)
	}
	if got := gitIn(t, dir, nil, "status", "--porcelain"); !strings.Contains(got, "?? new.txt") || !strings.Contains(got, "M a.txt") || strings.Contains(got, "A  new.txt") {
		t.Errorf("the agent's index moved: git status says\n%s", got)
	}
	if out.head != head || out.branch != "main" || out.path != transcript || out.size != int64(len(src)) {
		t.Errorf("head %q branch %q path %q size %d; want %s main %s %d", out.head, out.branch, out.path, out.size, head, transcript, len(src))
	}
	if out.files != 2 || out.added != 3 || out.deleted != 1 {
		t.Errorf("files %d +%d -%d against HEAD; want 2 +3 -1", out.files, out.added, out.deleted)
	}
	if got := gitIn(t, dir, nil, "cat-file", "blob", out.commit+"^:transcript"); got != strings.TrimSpace(string(src)) {
		t.Errorf("the conversation's parent does not hold the transcript (%d bytes)", len(got))
	}
	if got := gitIn(t, dir, nil, "rev-parse", "refs/paddock/checkpoints/1"); got != out.commit {
		t.Errorf("refs/paddock/checkpoints/1 is %s, want %s", got, out.commit)
	}
	var back wire.Checkpoint
	if err := json.Unmarshal([]byte(gitIn(t, dir, nil, "log", "-1", "--format=%s", out.commit)), &back); err != nil {
		t.Fatalf("the commit's message is no record: %v", err)
	}
	if back.Seq != 1 || back.Turn != 1 || back.Session != "main" || back.Tree != out.tree || back.Head != head ||
		back.Files != 2 || back.Conversation == nil || back.Conversation.Blob != out.blob || back.Conversation.ResumeID != "id" {
		t.Errorf("the record read back is %+v", back)
	}
	if p := promptOf(claude.Agent, out.tail); p != "thanks" {
		t.Errorf("the turn's prompt is %q, want the last message typed, %q", p, "thanks")
	}

	// Nothing changed since: nothing recorded.
	cp.Seq = 2
	again, err := s.runTakeIn(ctx, c, dir, cp, conv, out.tree, out.tree, out.blob, true, transcript)
	if err != nil {
		t.Fatal(err)
	}
	if !again.same {
		t.Errorf("a turn that changed nothing was recorded: %+v", again)
	}
	// A file changed by any means: recorded, counted against the checkpoint before.
	write(t, filepath.Join(dir, "new.txt"), "new\nmore\n")
	third, err := s.runTakeIn(ctx, c, dir, cp, conv, out.tree, out.tree, out.blob, true, transcript)
	if err != nil {
		t.Fatal(err)
	}
	if third.same || third.files != 1 || third.added != 1 || third.deleted != 0 || third.tail != nil {
		t.Errorf("after a change: same %v, %d files +%d -%d, tail %d bytes; want 1 file +1 -0 and no tail (the conversation did not change)",
			third.same, third.files, third.added, third.deleted, len(third.tail))
	}
}

// TestPruned: past the bounds, the oldest unnamed checkpoints go; named ones and the
// newest stay.
func TestPruned(t *testing.T) {
	all := []wire.Checkpoint{{Seq: 1, Bytes: 10}, {Seq: 2, Name: "keep", Bytes: 10}, {Seq: 3, Bytes: 10}, {Seq: 4, Bytes: 10}, {Seq: 5, Bytes: 100}}
	seqs := func(cps []wire.Checkpoint) (out []int) {
		for _, c := range cps {
			out = append(out, c.Seq)
		}
		return out
	}
	if got := seqs(pruned(all, 3, 0)); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("keep 3 prunes %v, want [1 3]", got)
	}
	if got := seqs(pruned(all, 10, 115)); len(got) != 3 || got[2] != 4 {
		t.Errorf("115 bytes prunes %v, want [1 3 4] (the named one and the newest stay)", got)
	}
	if got := pruned(all, 10, 0); len(got) != 0 {
		t.Errorf("within the bounds, %v pruned", seqs(got))
	}
}

// TestNextTurn: the next turn follows the newest turn, or the turn a rewind went to.
func TestNextTurn(t *testing.T) {
	all := []wire.Checkpoint{
		{Seq: 1, Session: "a", Kind: wire.CheckpointTurn, Turn: 1},
		{Seq: 2, Session: "a", Kind: wire.CheckpointTurn, Turn: 2},
		{Seq: 3, Session: "b", Kind: wire.CheckpointTurn, Turn: 7},
		{Seq: 4, Session: "a", Kind: wire.CheckpointTurn, Turn: 3},
	}
	if n := nextTurn(all, "a"); n != 4 {
		t.Errorf("next turn of a: %d, want 4", n)
	}
	all = append(all, wire.Checkpoint{Seq: 5, Session: "a", Kind: wire.CheckpointRewind, Turn: 3, RewoundTo: 1})
	if n := nextTurn(all, "a"); n != 2 {
		t.Errorf("after a rewind to turn 1: %d, want 2", n)
	}
	if n := nextTurn(all, "c"); n != 1 {
		t.Errorf("a new session's: %d, want 1", n)
	}
	// What the next turn changed is counted against the files the rewind put back.
	all[0].Tree, all[4].Tree = "t1", "t-undo"
	if tree, ok := stateBefore(all, 6); !ok || tree != "t1" {
		t.Errorf("the state after the rewind is %q, want turn 1's tree", tree)
	}
	if _, ok := stateBefore(all, 1); ok {
		t.Errorf("a state before the first checkpoint")
	}
}

// TestIdleEndsTurns: Codex, which says idle only at a turn's end (and nothing when the
// user types into its terminal), ends a turn at each idle; Claude Code, idle at its
// prompt after it starts too, and a shell session need to be seen at work first.
func TestIdleEndsTurns(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sb := store.Sandbox{ID: "s1", Name: "sb", Backend: "none", State: "running"}
	if err := st.CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Store: st})
	for agent, want := range map[string]bool{"codex": true, "claude": false, "shell": false} {
		if err := st.CreateSession(ctx, store.Session{SandboxID: sb.ID, Name: agent, Agent: agent}); err != nil {
			t.Fatal(err)
		}
		if got := s.idleEndsTurns(ctx, sb, agent); got != want {
			t.Errorf("%s: an idle ends a turn: %v, want %v", agent, got, want)
		}
	}
}

// TestGitEnvKeepsTheSandboxRules: the take and restore scripts' environment turns off
// what every git run in a sandbox for paddock turns off (hooks, fsmonitor).
func TestGitEnvKeepsTheSandboxRules(t *testing.T) {
	for _, kv := range gitsync.SandboxGitEnv {
		if !strings.HasPrefix(kv, "GIT_CONFIG_COUNT=") && !slices.Contains(gitEnv, kv) {
			t.Errorf("gitEnv lacks %s", kv)
		}
	}
}
