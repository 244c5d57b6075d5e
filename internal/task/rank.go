package task

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// The groups of the ranking, best first: an attempt's checks decide its group before
// anything else does, as an agent's own claim of success counts for nothing.
const (
	groupPassed   = iota // every check exited 0
	groupUnknown         // not checked yet, or the task has no checks
	groupFailed          // a check failed
	groupNotStart        // its sandbox or agent could not start
)

// Rank orders attempts best first and sets each one's Rank (from 1) and Why.
//
// Attempts whose checks all passed come first, then those not checked yet (or of a task
// with no checks), then those whose checks failed, then those that could not start.
// Within a group: one the judge scored before one it did not, the higher score first;
// then the smaller diff, the lower cost, the shorter time (a finished attempt before
// one still at work); then the order they were asked for. Why says what put an attempt
// above the next one ("#2" is the attempt ranked second), or in its group. Rank reads
// nothing but the attempts: the same attempts always rank the same.
func Rank(as []wire.Attempt) {
	slices.SortStableFunc(as, func(a, b wire.Attempt) int { return rankCompare(&a, &b) })
	for i := range as {
		as[i].Rank = i + 1
	}
	for i := range as {
		var next *wire.Attempt
		if i+1 < len(as) {
			next = &as[i+1]
		}
		as[i].Why = rankWhy(&as[i], next)
	}
}

// rankGroup is the attempt's group in the ranking.
func rankGroup(a *wire.Attempt) int {
	switch {
	case a.State == wire.AttemptFailed:
		return groupNotStart
	case a.Passed == nil:
		return groupUnknown
	case *a.Passed:
		return groupPassed
	}
	return groupFailed
}

// judgeScore is the judge's score of the attempt, and whether it gave one.
func judgeScore(a *wire.Attempt) (int, bool) {
	if a.Verdict == nil || a.Verdict.Error != "" {
		return 0, false
	}
	return a.Verdict.Score, true
}

// The criteria after the group, in order; each says which of two attempts of one group
// goes first (<0: a), and in words why, naming b by its rank.
var criteria = []struct {
	cmp func(a, b *wire.Attempt) int
	why func(a, b *wire.Attempt) string
}{
	{ // judged before not judged, then the higher score
		func(a, b *wire.Attempt) int {
			sa, oka := judgeScore(a)
			sb, okb := judgeScore(b)
			if oka != okb {
				if oka {
					return -1
				}
				return 1
			}
			return cmp.Compare(sb, sa)
		},
		func(a, b *wire.Attempt) string {
			if sb, ok := judgeScore(b); ok {
				return fmt.Sprintf("#%d: %d/10", b.Rank, sb)
			}
			return fmt.Sprintf("#%d not judged", b.Rank)
		},
	},
	{ // the smaller diff
		func(a, b *wire.Attempt) int { return cmp.Compare(a.Diff.Lines(), b.Diff.Lines()) },
		func(a, b *wire.Attempt) string {
			return fmt.Sprintf("%s smaller than #%d", pluralOf(b.Diff.Lines()-a.Diff.Lines(), "line"), b.Rank)
		},
	},
	{ // the lower cost
		func(a, b *wire.Attempt) int { return cmp.Compare(a.Usage.CostUSD, b.Usage.CostUSD) },
		func(a, b *wire.Attempt) string {
			return fmt.Sprintf("%s cheaper than #%d", usdDiff(b.Usage.CostUSD-a.Usage.CostUSD), b.Rank)
		},
	},
	{ // finished before at work, then the shorter time
		func(a, b *wire.Attempt) int {
			if fa, fb := !a.Ended.IsZero(), !b.Ended.IsZero(); fa != fb {
				if fa {
					return -1
				}
				return 1
			} else if !fa {
				return 0
			}
			return cmp.Compare(a.Elapsed(time.Time{}), b.Elapsed(time.Time{}))
		},
		func(a, b *wire.Attempt) string {
			if b.Ended.IsZero() {
				return fmt.Sprintf("done, #%d still at work", b.Rank)
			}
			return fmt.Sprintf("%s faster than #%d", secondsDiff(b.Elapsed(time.Time{})-a.Elapsed(time.Time{})), b.Rank)
		},
	},
}

// rankCompare orders two attempts: their groups, the criteria, then their numbers.
func rankCompare(a, b *wire.Attempt) int {
	if c := cmp.Compare(rankGroup(a), rankGroup(b)); c != 0 {
		return c
	}
	for _, c := range criteria {
		if r := c.cmp(a, b); r != 0 {
			return r
		}
	}
	return cmp.Compare(a.N, b.N)
}

// rankWhy says what put a where it is: its group, the judge's score, and what put it above
// next when next is of the same group.
func rankWhy(a, next *wire.Attempt) string {
	parts := []string{rankPlace(a)}
	s, judged := judgeScore(a)
	if judged {
		parts = append(parts, fmt.Sprintf("judge %d/10", s))
	} else if a.Verdict != nil {
		parts = append(parts, "the judge gave no score")
	}
	if next == nil || rankGroup(next) != rankGroup(a) {
		return strings.Join(parts, "; ")
	}
	for i, c := range criteria {
		if c.cmp(a, next) == 0 {
			continue
		}
		w := c.why(a, next)
		if i == 0 && judged {
			// "judge 8/10 (#2: 5/10)"
			parts[len(parts)-1] += " (" + w + ")"
		} else {
			parts = append(parts, w)
		}
		return strings.Join(parts, "; ")
	}
	return strings.Join(append(parts, fmt.Sprintf("even with #%d, asked for first", next.Rank)), "; ")
}

// rankPlace says what the attempt's checks (or its start) say of it, with its state when
// that matters to the reader: an attempt at work again was checked on its earlier work.
func rankPlace(a *wire.Attempt) string {
	switch rankGroup(a) {
	case groupNotStart:
		return "could not start: " + clipLine(a.Error, 80)
	case groupUnknown:
		switch {
		case a.State == wire.AttemptStarting:
			return "starting"
		case a.State == wire.AttemptWorking:
			return "at work, not checked yet"
		case a.State == wire.AttemptChecking:
			return "checks running"
		case a.Error != "":
			return clipLine(a.Error, 80) // the checks could not run
		case a.CheckRuns > 0 && len(a.Checks) == 0:
			return "no checks"
		}
		return "not checked"
	}
	p := "checks pass"
	if g := rankGroup(a); g == groupFailed {
		p = "checks fail: " + failingChecks(a.Checks)
	}
	switch a.State {
	case wire.AttemptLanded:
		p = "landed; " + p
	case wire.AttemptWorking:
		p += " (before its agent's current turn)"
	case wire.AttemptChecking:
		p += " (checks running again)"
	}
	return p
}

// failingChecks names the first failing check, and how many more failed.
func failingChecks(cs []wire.CheckResult) string {
	var first string
	more := 0
	for _, c := range cs {
		if c.Exit == 0 {
			continue
		}
		if first == "" {
			first = fmt.Sprintf("%s (exit %d)", clipLine(c.Command, 40), c.Exit)
		} else {
			more++
		}
	}
	switch {
	case first == "":
		return "no result kept"
	case more > 0:
		return fmt.Sprintf("%s and %d more", first, more)
	}
	return first
}

// clipLine is the first line of s, at most n characters.
func clipLine(s string, n int) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	} else if cut {
		return s + " …"
	}
	return s
}

func pluralOf(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// usdDiff is a difference of estimated costs for people.
func usdDiff(d float64) string {
	if d < 0.01 {
		return "<$0.01"
	}
	return fmt.Sprintf("~$%.2f", d)
}

// secondsDiff is a difference of durations for people, to the second.
func secondsDiff(d time.Duration) string {
	if d < time.Second {
		return "<1s"
	}
	return d.Round(time.Second).String()
}
