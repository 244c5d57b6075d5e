package task

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// attempt builds an attempt from words, as a test reads: "pass", "fail", "unchecked",
// "nostart", "working", "judge=N", "judge=error", "lines=N", "cost=X", "took=D".
func attempt(n int, desc string) wire.Attempt {
	a := wire.Attempt{N: n, Agent: "claude", State: wire.AttemptDone, Started: t0, Ended: t0.Add(time.Minute)}
	yes, no := true, false
	for _, w := range strings.Fields(desc) {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "pass":
			a.Passed, a.CheckRuns = &yes, 1
			a.Checks = []wire.CheckResult{{Command: "go test ./...", Exit: 0}}
		case "fail":
			a.Passed, a.CheckRuns = &no, 1
			a.Checks = []wire.CheckResult{{Command: "go vet ./...", Exit: 0}, {Command: "go test ./...", Exit: 1, Output: "--- FAIL: TestX"}}
		case "unchecked":
			a.Passed = nil
		case "nochecks":
			a.Passed, a.CheckRuns = nil, 1
		case "checkerror":
			a.Error = "the checks could not run: sandbox t-2 is not running"
		case "nostart":
			a.State, a.Error, a.Ended = wire.AttemptFailed, "create sandbox t-3: docker: image not found\nmore detail", time.Time{}
		case "working":
			a.State, a.Ended = wire.AttemptWorking, time.Time{}
		case "judge":
			if v == "error" {
				a.Verdict = &wire.Verdict{Judge: "codex", Error: "the judge's answer has no score"}
			} else {
				var s int
				fmt.Sscan(v, &s)
				a.Verdict = &wire.Verdict{Judge: "codex", Score: s, Reason: "fine"}
			}
		case "lines":
			fmt.Sscan(v, &a.Diff.Insertions)
		case "cost":
			fmt.Sscan(v, &a.Usage.CostUSD)
			a.Usage.Requests = 3
		case "took":
			d, err := time.ParseDuration(v)
			if err != nil {
				panic(err)
			}
			a.Ended = t0.Add(d)
		default:
			panic("unknown word " + w)
		}
	}
	return a
}

func TestRank(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string // attempt i+1's description
		// want is the attempts' numbers in rank order, each with its Why.
		want []string
	}{
		{
			name: "the attempt whose checks pass ranks above a cheaper, smaller one whose checks fail",
			in:   []string{"fail lines=3 cost=0.01", "pass lines=40 cost=0.50"},
			want: []string{"2: checks pass", "1: checks fail: go test ./... (exit 1)"},
		},
		{
			name: "not checked yet goes between passed and failed; could not start goes last",
			in:   []string{"nostart", "fail", "working", "pass"},
			want: []string{"4: checks pass", "3: at work, not checked yet", "2: checks fail: go test ./... (exit 1)",
				"1: could not start: create sandbox t-3: docker: image not found …"},
		},
		{
			name: "among passing attempts the judge's higher score wins over a smaller diff",
			in:   []string{"pass judge=5 lines=2", "pass judge=8 lines=90"},
			want: []string{"2: checks pass; judge 8/10 (#2: 5/10)", "1: checks pass; judge 5/10"},
		},
		{
			name: "a judged passing attempt goes before one the judge has not scored",
			in:   []string{"pass lines=4", "pass judge=3 lines=50", "pass judge=error lines=5"},
			want: []string{"2: checks pass; judge 3/10 (#2 not judged)", "1: checks pass; 1 line smaller than #3",
				"3: checks pass; the judge gave no score"},
		},
		{
			name: "with the same score the smaller diff wins, and Why says by how much",
			in:   []string{"pass judge=8 lines=30", "pass judge=8 lines=18"},
			want: []string{"2: checks pass; judge 8/10; 12 lines smaller than #2", "1: checks pass; judge 8/10"},
		},
		{
			name: "with the same diff the cheaper wins, then the faster",
			in:   []string{"pass lines=5 cost=0.30 took=1m", "pass lines=5 cost=0.10 took=5m", "pass lines=5 cost=0.10 took=2m30s"},
			want: []string{"3: checks pass; 2m30s faster than #2", "2: checks pass; ~$0.20 cheaper than #3", "1: checks pass"},
		},
		{
			name: "a finished attempt goes before one still at work, all else even; checks that could not run say why",
			in:   []string{"working", "unchecked", "checkerror"},
			want: []string{"2: not checked; even with #2, asked for first", "3: the checks could not run: sandbox t-2 is not running; done, #3 still at work",
				"1: at work, not checked yet"},
		},
		{
			name: "attempts even on every count keep the order they were asked for",
			in:   []string{"pass lines=4", "pass lines=4"},
			want: []string{"1: checks pass; even with #2, asked for first", "2: checks pass"},
		},
		{
			name: "a task with no checks ranks on the judge and the rest",
			in:   []string{"nochecks lines=10", "nochecks judge=7 lines=200", "nochecks lines=4 cost=0.001"},
			want: []string{"2: no checks; judge 7/10 (#2 not judged)", "3: no checks; 6 lines smaller than #3", "1: no checks"},
		},
		{
			name: "failing attempts rank among themselves too",
			in:   []string{"fail lines=9", "fail lines=3"},
			want: []string{"2: checks fail: go test ./... (exit 1); 6 lines smaller than #2", "1: checks fail: go test ./... (exit 1)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := make([]wire.Attempt, len(tc.in))
			for i, d := range tc.in {
				as[i] = attempt(i+1, d)
			}
			Rank(as)
			var got []string
			for i, a := range as {
				if a.Rank != i+1 {
					t.Errorf("attempt %d at place %d has Rank %d", a.N, i+1, a.Rank)
				}
				got = append(got, fmt.Sprintf("%d: %s", a.N, a.Why))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ranked:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

func TestRankFailures(t *testing.T) {
	a := attempt(1, "fail")
	a.Checks = append(a.Checks, wire.CheckResult{Command: "npm run lint -- --max-warnings 0 --format stylish src/", Exit: 2})
	as := []wire.Attempt{a}
	Rank(as)
	if want := "checks fail: go test ./... (exit 1) and 1 more"; as[0].Why != want {
		t.Errorf("Why = %q, want %q", as[0].Why, want)
	}
}

// TestRankDeterministic: whatever order the attempts come in (the store's, a previous
// ranking's), the same attempts rank the same, with the same reasons.
func TestRankDeterministic(t *testing.T) {
	descs := []string{"pass judge=8 lines=10", "pass judge=8 lines=10", "pass lines=3", "fail lines=1", "fail judge=2",
		"unchecked", "working", "nostart", "nostart", "pass judge=9 lines=500 cost=2", "pass judge=error cost=0.2"}
	base := make([]wire.Attempt, len(descs))
	for i, d := range descs {
		base[i] = attempt(i+1, d)
	}
	want := slices.Clone(base)
	Rank(want)
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		as := slices.Clone(base)
		r.Shuffle(len(as), func(i, j int) { as[i], as[j] = as[j], as[i] })
		Rank(as)
		for i := range as {
			if as[i].N != want[i].N || as[i].Why != want[i].Why {
				t.Fatalf("place %d: attempt %d (%s), want attempt %d (%s)", i+1, as[i].N, as[i].Why, want[i].N, want[i].Why)
			}
		}
	}
}
