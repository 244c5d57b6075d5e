package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
	"github.com/paddockhq/paddock/internal/testenv"
)

func TestTimeline(t *testing.T) {
	turn := func(seq, n int, session string) wire.Checkpoint {
		return wire.Checkpoint{Seq: seq, Turn: n, Session: session, Kind: wire.CheckpointTurn}
	}
	rewind := func(seq, to int) wire.Checkpoint {
		return wire.Checkpoint{Seq: seq, Session: "s", Kind: wire.CheckpointRewind, RewoundTo: to, Name: "undo"}
	}
	manual := wire.Checkpoint{Seq: 2, Kind: wire.CheckpointManual, Name: "by-hand"}
	for _, tc := range []struct {
		name string
		all  []wire.Checkpoint
		want []int // the Seqs on the line, the oldest turn first
	}{
		{"none", nil, []int{}},
		{"straight", []wire.Checkpoint{turn(1, 1, "s"), manual, turn(3, 2, "s"), turn(4, 3, "s")}, []int{1, 3, 4}},
		{"another session's turns are not on the line", []wire.Checkpoint{turn(1, 1, "s"), turn(2, 1, "t"), turn(3, 2, "t")}, []int{1}},
		// turns 1-4, a rewind to turn 2, then a new turn 3: the old 3 and 4 are off the line.
		{"after a rewind and a new turn", []wire.Checkpoint{turn(1, 1, "s"), turn(2, 2, "s"), turn(3, 3, "s"), turn(4, 4, "s"), rewind(5, 2), turn(6, 3, "s")}, []int{1, 2, 6}},
		{"right after a rewind", []wire.Checkpoint{turn(1, 1, "s"), turn(2, 2, "s"), turn(3, 3, "s"), rewind(4, 1)}, []int{1}},
		{"an undone rewind", []wire.Checkpoint{turn(1, 1, "s"), turn(2, 2, "s"), turn(3, 3, "s"), rewind(4, 1), rewind(5, 4)}, []int{1, 2, 3}},
		// turns 1-5, a rewind to turn 2, a new turn 3, then the rewind undone: the first
		// line again, without the new turn 3.
		{"a rewind undone after a new turn", []wire.Checkpoint{turn(1, 1, "s"), turn(2, 2, "s"), turn(3, 3, "s"), turn(4, 4, "s"), turn(5, 5, "s"),
			rewind(6, 2), turn(7, 3, "s"), rewind(8, 6)}, []int{1, 2, 3, 4, 5}},
		// ... and two turns more after that undo.
		{"turns after an undone rewind", []wire.Checkpoint{turn(1, 1, "s"), turn(2, 2, "s"), turn(3, 3, "s"), rewind(4, 1), turn(5, 2, "s"),
			rewind(6, 4), turn(7, 4, "s"), turn(8, 5, "s")}, []int{1, 2, 3, 7, 8}},
		{"a rewind to a checkpoint taken by hand", []wire.Checkpoint{turn(1, 1, "s"), manual, turn(3, 2, "s"), rewind(4, 2), turn(5, 2, "s")}, []int{1, 5}},
		{"a pruned turn is missing", []wire.Checkpoint{turn(2, 2, "s"), turn(3, 3, "s")}, []int{2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := []int{}
			for _, c := range timeline(tc.all, "s") {
				got = append(got, c.Seq)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("timeline = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSearch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		turns    int
		firstBad int // 0: the check passes throughout
		wantGood int // 0: none
		maxTries int
	}{
		{"passes at the newest", 5, 0, 0, 1},
		{"breaks at turn 3 of 5", 5, 3, 2, 4},
		{"breaks at the newest", 8, 8, 7, 4},
		{"fails from the first turn", 5, 1, 0, 4},
		{"one turn that fails", 1, 1, 0, 1},
		{"breaks at turn 37 of 100", 100, 37, 36, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var line []wire.Checkpoint
			for n := 1; n <= tc.turns; n++ {
				line = append(line, wire.Checkpoint{Seq: 10 + n, Turn: n, Kind: wire.CheckpointTurn})
			}
			var tried []int
			res, err := search(context.Background(), line, func(_ context.Context, cp wire.Checkpoint) (wire.BisectStep, error) {
				tried = append(tried, cp.Turn)
				exit := 0
				if tc.firstBad > 0 && cp.Turn >= tc.firstBad {
					exit = 1
				}
				return wire.BisectStep{Turn: cp.Turn, Seq: cp.Seq, Exit: exit}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if tried[0] != tc.turns {
				t.Errorf("the first try was turn %d, want the newest (%d)", tried[0], tc.turns)
			}
			if len(tried) > tc.maxTries || len(res.Steps) != len(tried) {
				t.Errorf("tried %v (%d steps), want at most %d tries, one step each", tried, len(res.Steps), tc.maxTries)
			}
			switch {
			case tc.firstBad == 0:
				if res.FirstBad != nil || res.Note == "" {
					t.Errorf("FirstBad = %v, Note = %q; want none and a note", res.FirstBad, res.Note)
				}
			case res.FirstBad == nil || res.FirstBad.Turn != tc.firstBad:
				t.Errorf("FirstBad = %v, want turn %d", res.FirstBad, tc.firstBad)
			case tc.wantGood == 0 && (res.Good != nil || res.Note == ""):
				t.Errorf("Good = %v, Note = %q; want none and a note that it fails from the first turn", res.Good, res.Note)
			case tc.wantGood > 0 && (res.Good == nil || res.Good.Turn != tc.wantGood):
				t.Errorf("Good = %v, want turn %d", res.Good, tc.wantGood)
			}
		})
	}
}

// TestBisectScratchCopies bisects five turns of a real repository through a real guest:
// the file stops saying ok at turn 3, and the check, which scribbles over the copy it
// runs in and says where that is, finds turn 3 with turn 3's diff, each try in a copy
// exactly as its checkpoint holds it. The agent's staged and untracked work, its index
// and HEAD are as they were, and the scratch copy is gone.
func TestBisectScratchCopies(t *testing.T) {
	testenv.Program(t, "git", "install git")
	c, _ := guesttest.Connect(t)
	dir := filepath.Join(t.TempDir(), "workspace")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, nil, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, ".gitignore"), "build/\n")
	write(t, filepath.Join(dir, "file"), "ok\n")
	write(t, filepath.Join(dir, "keep"), "the same at every turn\n")
	gitIn(t, dir, nil, "add", "-A")
	gitIn(t, dir, nil, "commit", "-q", "-m", "first")
	head := gitIn(t, dir, nil, "rev-parse", "HEAD")
	var line []wire.Checkpoint
	for n, content := range []string{"ok 1\n", "ok 2\n", "bad 3\n", "bad 4\n", "bad 5\n"} {
		write(t, filepath.Join(dir, "file"), content)
		write(t, filepath.Join(dir, "build", "out"), content) // ignored: in no checkpoint
		index := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
		gitIn(t, dir, index, "add", "-A", ".")
		commit := gitIn(t, dir, nil, "commit-tree", "-m", "checkpoint", gitIn(t, dir, index, "write-tree"))
		line = append(line, wire.Checkpoint{Seq: n + 1, Turn: n + 1, Kind: wire.CheckpointTurn, Commit: commit, Head: head})
	}
	// The agent works on: a staged change, an untracked file.
	write(t, filepath.Join(dir, "staged"), "agent's\n")
	gitIn(t, dir, nil, "add", "staged")
	write(t, filepath.Join(dir, "untracked"), "agent's\n")
	state := func() string {
		return gitIn(t, dir, nil, "status", "--porcelain=v2", "--untracked-files=all", "--ignored") + "\n" +
			gitIn(t, dir, nil, "rev-parse", "HEAD") + "\n" + gitIn(t, dir, nil, "ls-files", "-s") + "\n" +
			read(t, filepath.Join(dir, "file")) + read(t, filepath.Join(dir, "build", "out"))
	}
	before := state()

	// The check finds the copy as the checkpoint has it (nothing a try before made or
	// changed, no ignored file), and then scribbles over it: a file changed, one
	// removed, a new one, a directory it may not write.
	places := filepath.Join(t.TempDir(), "places")
	check := "test ! -e made-by-check -a -e keep -a ! -e build/out || exit 9; ! grep -q scribbled file .gitignore || exit 8; " +
		"pwd >> " + places + "; grep -q ok file; r=$?; echo scribbled > file; echo scribbled >> .gitignore; rm keep; " +
		"mkdir -p made-by-check/ro; touch made-by-check/ro/x; chmod a-w made-by-check/ro; exit $r"
	sc := &scratch{c: c, workspace: dir}
	res, err := search(t.Context(), line, func(ctx context.Context, cp wire.Checkpoint) (wire.BisectStep, error) {
		return sc.try(ctx, cp, check)
	})
	if err != nil {
		t.Fatal(err)
	}
	sc.close(t.Context())
	if res.FirstBad == nil || res.FirstBad.Turn != 3 || res.Good == nil || res.Good.Turn != 2 {
		t.Fatalf("bisect found %+v after %+v, want turn 3 after turn 2 (steps %+v)", res.FirstBad, res.Good, res.Steps)
	}
	for _, st := range res.Steps {
		if want := map[bool]int{true: 0, false: 1}[st.Turn < 3]; st.Exit != want {
			t.Errorf("turn %d: exit %d, want %d; output %q", st.Turn, st.Exit, want, st.Output)
		}
	}
	if after := state(); after != before {
		t.Errorf("the agent's workspace changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := os.Lstat(filepath.Join(dir, "made-by-check")); !os.IsNotExist(err) {
		t.Errorf("the check ran in the workspace (%v)", err)
	}
	ran := strings.Fields(read(t, places))
	if len(ran) != len(res.Steps) {
		t.Fatalf("the check ran in %v, want one place per step (%d)", ran, len(res.Steps))
	}
	for _, p := range ran {
		if p != ran[0] {
			t.Errorf("the tries ran in %v: one copy, moved from checkpoint to checkpoint, was wanted", ran)
		}
		if !strings.HasPrefix(p, "/tmp/paddock-bisect.") {
			t.Errorf("the check ran in %s, not a scratch copy", p)
		}
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("the scratch copy %s is still there (%v)", p, err)
		}
		if _, err := os.Lstat(p + ".index"); !os.IsNotExist(err) {
			t.Errorf("the scratch index %s.index is still there (%v)", p, err)
		}
	}

	stat, patch, err := turnDiff(t.Context(), c, dir, res.Good.Commit, *res.FirstBad)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stat, " file | 2 +-") || !strings.Contains(patch, "\n-ok 2\n+bad 3\n") {
		t.Errorf("turn 3's diff:\n%s\n%s", stat, patch)
	}
	// With no good turn, the diff is from the commit HEAD was at.
	_, patch, err = turnDiff(t.Context(), c, dir, "", line[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch, "\n-ok\n+ok 1\n") || strings.Contains(patch, "build/out") {
		t.Errorf("turn 1's diff from HEAD:\n%s", patch)
	}
}
