package checkpoint

import (
	"context"
	"slices"
	"testing"

	"github.com/paddockhq/paddock/internal/api/wire"
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
		{"an undone rewind", []wire.Checkpoint{turn(1, 1, "s"), turn(2, 2, "s"), turn(3, 3, "s"), rewind(4, 1), rewind(5, 3)}, []int{1, 2, 3}},
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
