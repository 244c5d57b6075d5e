package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/session"
)

// The fake daemon's checkpoints, as the daemon keeps them: by sandbox, each of a session;
// a rewind leaves an undo point (kind rewind, named undo-SEQ); a fork makes the sandbox.

func (f *fakeDaemon) Checkpoints(ctx context.Context, sb, name string) ([]wire.Checkpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.sandboxes[sb]; !ok {
		return nil, apperr.NotFound("", "no sandbox named %q", sb)
	}
	var out []wire.Checkpoint
	for _, cp := range f.checkpoints[sb] {
		if name == "" || cp.Session == name {
			out = append(out, cp)
		}
	}
	return out, nil
}

func (f *fakeDaemon) CheckpointDiff(ctx context.Context, sb, name, from, to string, stat bool) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.cpDiffs[sb+" "+from+".."+to]
	if !ok {
		return "", apperr.NotFound("", "no diff %s..%s in %s", from, to, sb)
	}
	if stat {
		return d[0], nil
	}
	return d[1], nil
}

func (f *fakeDaemon) Rewind(ctx context.Context, sb, name string, req wire.RewindRequest) (wire.RewindResult, error) {
	f.record("rewind %s/%s to=%s", sb, name, req.To)
	f.mu.Lock()
	defer f.mu.Unlock()
	cps := f.checkpoints[sb]
	for _, cp := range cps {
		if fmt.Sprintf("#%d", cp.Seq) == req.To {
			seq := cps[len(cps)-1].Seq + 1
			undo := wire.Checkpoint{Seq: seq, Sandbox: sb, Session: name, Kind: wire.CheckpointRewind, Name: fmt.Sprintf("undo-%d", seq),
				RewoundTo: cp.Seq, Time: time.Now()}
			f.checkpoints[sb] = append(cps, undo)
			return wire.RewindResult{To: cp, Undo: undo}, nil
		}
	}
	return wire.RewindResult{}, apperr.NotFound("", "no checkpoint %s", req.To)
}

func (f *fakeDaemon) Fork(ctx context.Context, sb string, req wire.ForkRequest, progress func(string)) (wire.ForkResult, error) {
	f.record("fork %s session=%s at=%s new=%s backend=%s", sb, req.Session, req.At, req.New, req.Backend)
	f.mu.Lock()
	defer f.mu.Unlock()
	from := f.sandboxes[sb]
	f.sandboxes[req.New] = wire.SandboxInfo{Name: req.New, Backend: from.Backend, State: "running", SourcePath: from.SourcePath, Network: "closed"}
	return wire.ForkResult{Sandboxes: []string{req.New}, Sessions: []string{req.Session}}, nil
}

// TestTimelineRewindsAndForks: t on a session shows its checkpoints, one line a turn
// (files, lines, the prompt's first words, escaped), the newest selected with its diff
// beside them; r on an earlier turn asks, then rewinds to that checkpoint and says how to
// undo it, and the undo point shows in the list; f forks a new sandbox from the selected
// turn under the name typed; a checkpoint event brings the next turn's line.
func TestTimelineRewindsAndForks(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", session.Info{Name: "main", Agent: "claude", Status: "idle"})
	now := time.Now()
	cp := func(seq, turn, files, add, del int, prompt string) wire.Checkpoint {
		return wire.Checkpoint{Seq: seq, Sandbox: "api", Session: "main", Turn: turn, Kind: wire.CheckpointTurn, Time: now.Add(time.Duration(seq-10) * time.Minute),
			Files: files, Added: add, Deleted: del, Prompt: prompt, Conversation: &wire.Conversation{Agent: "claude", Size: 4096}}
	}
	f.checkpoints = map[string][]wire.Checkpoint{"api": {
		cp(1, 1, 2, 10, 0, "Add a login page"),
		cp(2, 2, 1, 3, 1, "Fix the \x1b[31mtypo\x1b[0m in the title"),
		cp(3, 3, 4, 20, 7, "Refactor the session store"),
	}}
	f.cpDiffs = map[string][2]string{
		"api ..#1": {" login.go | 10 ++++++++++\n", "+++ b/login.go\n+package login\n"},
		"api ..#2": {" title.txt | 2 +-\n", "--- a/title.txt\n+++ b/title.txt\n-Helo\n+Hello\n"},
		"api ..#3": {" store.go | 27 ++++++++--------\n 3 files changed\n", "+++ b/store.go\n+func Open() {}\n"},
		"api ..#4": {"", ""},
	}
	u := startTUI(t, f, nil, 200, 20)
	u.waitFor("main")
	u.press("G", "t")
	u.waitFor("api/main · turns")
	// The lines come with the checkpoints' read, a moment after the view opens.
	s := u.waitFor("Refactor the session store")
	if l := listLine(s, "turn 1"); !strings.Contains(l, "2 files") || !strings.Contains(l, "+10") || !strings.Contains(l, "Add a login page") {
		t.Errorf("turn 1's line: %q", l)
	}
	if l := listLine(s, "turn 2"); !strings.Contains(l, `Fix the \x1b[31mtypo`) {
		t.Errorf("turn 2's prompt is not escaped: %q", l)
	}
	// The newest is selected, marked as where the session stands, its diff beside it.
	if l := listLine(s, "turn 3"); !strings.Contains(l, "▶") || !strings.Contains(l, "+20 −7") {
		t.Errorf("turn 3's line: %q", l)
	}
	u.waitFor("store.go | 27")
	u.waitFor("+func Open() {}")
	u.press("up")
	u.waitFor("title.txt | 2 +-")
	u.waitFor("+Hello")
	// enter shows the whole diff in the pager; q comes back to the turns.
	u.press("enter")
	u.waitFor("api/main turn 2  ↑/↓ pgup/pgdn scroll · q back")
	u.press("q")
	u.waitFor("r rewind to it")

	// r asks first; n leaves everything as it was.
	u.press("r")
	u.waitFor("Rewind api/main to turn 2? Files and conversation go back")
	u.press("n")
	u.waitFor("cancelled")
	if got := f.callLog(); len(got) != 0 {
		t.Fatalf("calls before a yes: %q", got)
	}
	u.press("r")
	u.waitFor("Rewind api/main to turn 2?")
	u.press("y")
	waitCalls(t, f, "rewind api/main to=#2")
	u.waitFor("rewound api/main to turn 2; undo: paddock rewind api/main --to undo-4")
	s = u.waitFor("#4 undo")
	if l := listLine(s, "turn 2"); !strings.Contains(l, "▶") {
		t.Errorf("after the rewind the session stands at turn 2: %q", l)
	}
	if l := listLine(s, "#4 undo"); !strings.Contains(l, "before the rewind to #2 (undo-4)") {
		t.Errorf("the undo point's line: %q", l)
	}
	// The session stands at turn 2 now: no rewind to it.
	u.press("r")
	u.waitFor("api/main is at turn 2 already")
	// The undo point changed nothing since the checkpoint before it.
	u.press("G")
	u.waitFor("(no change to the files)")
	u.press("up", "up")

	// f on turn 1 asks the new sandbox's name, then forks.
	u.press("up", "f")
	u.waitFor("fork api/main at turn 1 into a new sandbox (NAME, or NAME BACKEND for another backend): api-turn1")
	u.press("ctrl+u")
	u.typeText("api-try docker")
	u.press("enter")
	waitCalls(t, f, "rewind api/main to=#2", "fork api session=main at=#1 new=api-try backend=docker")
	u.waitFor("forked api/main at turn 1 into api-try, with its conversation")

	// The agent's next turn: its checkpoint shows when its event arrives.
	f.mu.Lock()
	f.checkpoints["api"] = append(f.checkpoints["api"], cp(5, 3, 1, 2, 0, "Try the other way"))
	f.mu.Unlock()
	f.publish(wire.Event{Kind: "checkpoint", Sandbox: "api", Session: "main", Detail: "turn 3: 1 file +2 -0"})
	u.waitFor("Try the other way")

	u.press("esc")
	u.waitFor("enter attach · n new")
	u.waitFor("api-try")
}

// listLine is the line of the screen's list (left of the rule) holding text.
func listLine(screen, text string) string {
	for _, l := range strings.Split(screen, "\n") {
		l, _, _ = strings.Cut(l, "│")
		if strings.Contains(l, text) {
			return l
		}
	}
	return ""
}

// TestTimelineWithoutCheckpoints: a session with no checkpoint yet says how one is taken;
// on a sandbox's line t asks for a session.
func TestTimelineWithoutCheckpoints(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", session.Info{Name: "main", Agent: "claude", Status: "idle"})
	u := startTUI(t, f, nil, 200, 20)
	u.waitFor("main")
	u.press("g", "down", "t") // the sandbox's line
	u.waitFor("select a session to see its turns")
	u.press("down", "t")
	u.waitFor("No checkpoints yet: one is taken when the agent ends a turn")
	u.press("r", "f")
	if got := f.callLog(); len(got) != 0 {
		t.Fatalf("calls with no checkpoint: %q", got)
	}
}
