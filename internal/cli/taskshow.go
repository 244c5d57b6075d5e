package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

type taskLsOptions struct{ json bool }

func newCmdTaskLs(f *Factory) *cobra.Command {
	opts := &taskLsOptions{}
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the tasks: state, attempts done, the best one, checks passed, cost, age",
		Args:  exactArgs(0, "no arguments"),
		RunE:  func(cmd *cobra.Command, _ []string) error { return runTaskLs(cmd.Context(), f, opts) },
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func runTaskLs(ctx context.Context, f *Factory, opts *taskLsOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	ts, err := c.Tasks(ctx)
	if err != nil {
		return err
	}
	tw, err := listing(f, opts.json, ts, "no tasks: start one with `paddock task new REPO --prompt TEXT --agents claude:2,codex --check CMD`",
		"NAME\tSTATE\tATTEMPTS\tBEST\tCHECKS\tCOST\tAGE")
	if tw == nil {
		return err
	}
	for _, t := range ts {
		ended, passed := 0, 0
		var cost wire.UsageSum
		for _, a := range t.Attempts {
			if attemptEnded(a) {
				ended++
			}
			if a.Passed != nil && *a.Passed {
				passed++
			}
			cost.Add(a.Usage)
		}
		best, checks := "-", "-"
		if b := t.Best(); b != nil {
			best = fmt.Sprintf("%s/%d %s", t.Name, b.N, b.Agent)
		}
		if len(t.Checks) > 0 {
			checks = fmt.Sprintf("%d/%d pass", passed, len(t.Attempts))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d done\t%s\t%s\t%s\t%s\n", t.Name, t.State, ended, len(t.Attempts), best, checks,
			termtext.Cost(cost.Requests, cost.Unpriced, cost.CostUSD), age(time.Since(t.Created)))
	}
	return tw.Flush()
}

type taskShowOptions struct {
	name string
	json bool
}

func newCmdTaskShow(f *Factory) *cobra.Command {
	opts := &taskShowOptions{}
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "A task's attempts ranked, the best first: checks, diff, cost, time, the judge's verdict, and why",
		Args:  exactArgs(1, "a task's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.name = args[0]
			return runTaskShow(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func runTaskShow(ctx context.Context, f *Factory, opts *taskShowOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	t, err := c.Task(ctx, opts.name)
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(f, t)
	}
	w := termtext.NewWriter(f.IO.Out)
	writeTask(w, t, time.Now())
	return w.Flush()
}

// checkTail is how many lines of a failing check's output show prints.
const checkTail = 6

// writeTask prints a task as show does: what it is, then each attempt in rank order,
// then what to run next.
func writeTask(w io.Writer, t wire.Task, now time.Time) {
	fmt.Fprintf(w, "task %s: %s\n", t.Name, t.State)
	if t.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", t.Error)
	}
	base := t.Base
	if len(base) > 12 {
		base = base[:12]
	}
	fmt.Fprintf(w, "  repo:   %s at %s, lands on %s\n", t.Repo, base, t.Branch)
	fmt.Fprintf(w, "  prompt: %s\n", firstLine(t.Prompt, 100))
	if len(t.Checks) > 0 {
		fmt.Fprintf(w, "  checks: %s\n", strings.Join(t.Checks, " ; "))
	}
	if t.Setup != "" {
		fmt.Fprintf(w, "  setup:  %s\n", t.Setup)
	}
	if t.Judge != "" {
		fmt.Fprintf(w, "  judge:  %s\n", t.Judge)
	}
	for _, a := range t.Attempts {
		fmt.Fprintln(w)
		writeAttempt(w, t, a, now)
	}
	fmt.Fprintf(w, "\n%s\n", nextTaskStep(t))
}

// writeAttempt prints one attempt's block: its place and handle, then its checks, its
// work, the judge's verdict and why it is where it is.
func writeAttempt(w io.Writer, t wire.Task, a wire.Attempt, now time.Time) {
	place := "-"
	if a.Rank > 0 {
		place = fmt.Sprintf("#%d", a.Rank)
	}
	backend := ""
	if a.Backend != "" {
		backend = " on " + a.Backend
	}
	fmt.Fprintf(w, "%s  %s/%d  %s%s  %s\n", place, t.Name, a.N, a.Agent, backend, a.State)
	if a.Error != "" {
		fmt.Fprintf(w, "    error:   %s\n", a.Error)
	}
	fmt.Fprintf(w, "    checks:  %s\n", checksLine(t, a))
	for _, ch := range a.Checks {
		if ch.Exit == 0 {
			continue
		}
		fmt.Fprintf(w, "      $ %s  (exit %d)\n", ch.Command, ch.Exit)
		for _, line := range lastLines(ch.Output, checkTail) {
			fmt.Fprintf(w, "      | %s\n", line)
		}
	}
	dirty := ""
	if a.Dirty {
		dirty = ", uncommitted"
	}
	fmt.Fprintf(w, "    diff:    %s, +%d -%d%s\n", plural(a.Diff.Files, "file"), a.Diff.Insertions, a.Diff.Deletions, dirty)
	fmt.Fprintf(w, "    cost:    %s   time: %s\n", termtext.Cost(a.Usage.Requests, a.Usage.Unpriced, a.Usage.CostUSD), a.Elapsed(now).Round(time.Second))
	if v := a.Verdict; v != nil {
		if v.Error != "" {
			fmt.Fprintf(w, "    judge:   %s gave no score: %s\n", v.Judge, v.Error)
		} else {
			fmt.Fprintf(w, "    judge:   %s, %d/10: %s\n", v.Judge, v.Score, firstLine(v.Reason, 160))
		}
	}
	if n := len(a.Reviews); n > 0 {
		fmt.Fprintf(w, "    reviews: %d, the last: %s\n", n, firstLine(a.Reviews[n-1].Message, 100))
	}
	if a.Sandbox != "" {
		fmt.Fprintf(w, "    sandbox: %s", a.Sandbox)
		if a.Branch != "" {
			fmt.Fprintf(w, ", branch %s", a.Branch)
		}
		fmt.Fprintln(w)
	}
	if a.Why != "" {
		fmt.Fprintf(w, "    why:     %s\n", a.Why)
	}
}

// checksLine sums up an attempt's checks: passed, failed (which), or not yet run.
func checksLine(t wire.Task, a wire.Attempt) string {
	switch {
	case len(t.Checks) == 0:
		return "none given"
	case a.Passed == nil && a.State == wire.AttemptChecking:
		return "running"
	case a.Passed == nil:
		return "not run yet"
	}
	runs := ""
	if a.CheckRuns > 1 {
		runs = fmt.Sprintf(" (run %d times)", a.CheckRuns)
	}
	if *a.Passed {
		return fmt.Sprintf("pass, all %d%s", len(a.Checks), runs)
	}
	failed := 0
	for _, ch := range a.Checks {
		if ch.Exit != 0 {
			failed++
		}
	}
	return fmt.Sprintf("FAIL, %d of %d%s", failed, len(a.Checks), runs)
}

// firstLine is s's first line, cut to max runes.
func firstLine(s string, max int) string {
	s, _, more := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	} else if more {
		return s + " …"
	}
	return s
}

// lastLines is the last n non-empty-ended lines of s.
func lastLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// plural is n and the word, an s after it unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
