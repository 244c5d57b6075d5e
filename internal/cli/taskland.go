package cli

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

type taskReviewOptions struct {
	name    string
	n       int
	file    string
	line    int
	message string
}

func newCmdTaskReview(f *Factory) *cobra.Command {
	opts := &taskReviewOptions{}
	cmd := &cobra.Command{
		Use:   "review NAME/N [--file F --line N] MESSAGE",
		Short: "Send a comment to an attempt's agent as its next message; its next work is checked and ranked again",
		Args:  exactArgs(2, "an attempt (NAME/N) and a message"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.name, opts.n, err = taskRef(args[0]); err != nil {
				return err
			}
			opts.message = args[1]
			return runTaskReview(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.file, "file", "", "the `FILE` of the attempt's diff the comment is about")
	cmd.Flags().IntVar(&opts.line, "line", 0, "with --file: the line `N` the comment is about")
	return cmd
}

func runTaskReview(ctx context.Context, f *Factory, opts *taskReviewOptions) error {
	if strings.TrimSpace(opts.message) == "" {
		return usagef("the comment is empty: say what the agent should change")
	}
	if opts.line < 0 || opts.line > 0 && opts.file == "" {
		return usagef("--line goes with --file, and counts from 1")
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	a, err := c.ReviewAttempt(ctx, opts.name, opts.n, wire.ReviewRequest{File: opts.file, Line: opts.line, Message: opts.message})
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: sent to %s/%d (%s, sandbox %s); its next work is checked again: `paddock task show %s`\n",
		opts.name, a.N, a.Agent, a.Sandbox, opts.name)
	return nil
}

type taskLandOptions struct {
	name    string
	attempt int
	into    string
	pr      bool
	remote  string
	yes     bool
	wait    bool
	json    bool
}

func newCmdTaskLand(f *Factory) *cobra.Command {
	opts := &taskLandOptions{}
	cmd := &cobra.Command{
		Use:   "land NAME [--attempt N] [--into BRANCH] [--pr] [--wait]",
		Short: "Land a task's best attempt through the merge queue of its repository and branch, or open a pull request",
		Long: `Put an attempt (the best one, or --attempt N; it must have passed its checks) in the merge
queue of the task's host repository and branch. One entry at a time,
in order: the attempt's work is rebased onto the branch inside its own sandbox, its checks
run again on the result, and the host branch is fast-forwarded only if they pass. The host
never runs a hook or a config of the sandbox's. A conflict goes back to the attempt's agent
as a message, and the entry waits for its answer; ` + "`paddock task drop ID`" + ` gives up.

With --pr, the branch is pushed to the repository's remote (--remote, default origin) and a
pull request opened on GitHub with the token in the daemon's GH_TOKEN (or GITHUB_TOKEN).

Work that changes files which run code on the host once landed (git hooks, .envrc,
Makefiles...) is refused, naming them, until --yes.`,
		Args: exactArgs(1, "a task's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.name = args[0]
			return runTaskLand(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.attempt, "attempt", 0, "the attempt `N` to land, by its number (default: the best); it must have passed its checks")
	fl.StringVar(&opts.into, "into", "", "the host `BRANCH` to land on (default: the task's)")
	fl.BoolVar(&opts.pr, "pr", false, "push the branch to the remote and open a pull request instead")
	fl.StringVar(&opts.remote, "remote", "", "with --pr: the `REMOTE` to push to (default origin)")
	fl.BoolVar(&opts.yes, "yes", false, "land even when the work changes files that run code on the host")
	fl.BoolVar(&opts.wait, "wait", false, "follow the entry until it lands, fails, conflicts or its pull request is open")
	fl.BoolVar(&opts.json, "json", false, "print the queue entry as JSON (with --wait: as it ended)")
	return cmd
}

func runTaskLand(ctx context.Context, f *Factory, opts *taskLandOptions) error {
	if opts.attempt < 0 {
		return usagef("--attempt counts from 1 (`paddock task show %s` numbers them)", opts.name)
	}
	if opts.remote != "" && !opts.pr {
		return usagef("--remote goes with --pr")
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	req := wire.LandRequest{Attempt: opts.attempt, Into: opts.into, PR: opts.pr, Remote: opts.remote, Yes: opts.yes}
	return putInQueue(ctx, f, c, opts.json, opts.wait, func(yes bool) (wire.QueueEntry, error) {
		req.Yes = req.Yes || yes
		return c.LandTask(ctx, opts.name, req)
	})
}

// putInQueue puts work in the merge queue with put, and says where its entry stands: a
// line, or with asJSON the entry; with wait it follows the entry to its end, which is
// then the exit status. When the daemon refuses for the files that run code on the host,
// the user on a terminal answers here, as paddock merge asks, and a yes puts it again.
func putInQueue(ctx context.Context, f *Factory, c *client.Client, asJSON, wait bool, put func(yes bool) (wire.QueueEntry, error)) error {
	e, err := put(false)
	if err != nil && needsYes(err) && !f.NonInteractive && !asJSON && isTerminal(f.IO.In) && isTerminal(f.IO.ErrOut) {
		fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n  %s\nLand anyway? [y/N] ", err, apperr.HintOf(err))
		answer, _ := bufio.NewReader(f.IO.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return apperr.Invalid("", "not landed")
		}
		e, err = put(true)
	}
	if err != nil {
		return err
	}
	if wait {
		if e, err = waitEntry(ctx, f, c, e); err != nil {
			return err
		}
	}
	if asJSON {
		if err := writeJSON(f, e); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", entryLine(e))
	}
	if !wait {
		return nil
	}
	return exitOfEntry(e)
}

// needsYes says the daemon refused a landing until the user accepts files that run
// code on the host (its hint says to land again with --yes).
func needsYes(err error) bool {
	return apperr.KindOf(err) == apperr.KindInvalid && strings.Contains(apperr.HintOf(err), "--yes")
}

// waitEntry follows a queue entry until it stops moving: landed, failed, dropped, a
// conflict for the agent to answer, or an open pull request.
func waitEntry(ctx context.Context, f *Factory, c *client.Client, e wire.QueueEntry) (wire.QueueEntry, error) {
	last := ""
	// A landing often ends in a fraction of a second: asked soon, then every taskPoll.
	every := 100 * time.Millisecond
	tick := time.NewTimer(every)
	defer tick.Stop()
	for {
		if e.State != last && e.State != wire.QueueConflict && e.State != wire.QueuePR && e.Open() {
			fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", entryLine(e))
		}
		last = e.State
		if !e.Open() || e.State == wire.QueueConflict || e.State == wire.QueuePR {
			return e, nil
		}
		select {
		case <-ctx.Done():
			return e, ctx.Err()
		case <-tick.C:
		}
		every = min(2*every, taskPoll)
		tick.Reset(every)
		es, err := c.Queue(ctx, e.Task)
		if err != nil {
			return e, err
		}
		for _, x := range es {
			if x.ID == e.ID {
				e = x
			}
		}
	}
}

// entryLine says where a queue entry stands, in a line.
func entryLine(e wire.QueueEntry) string {
	who := entryWho(e)
	switch e.State {
	case wire.QueueWaiting:
		return fmt.Sprintf("%s is in the merge queue of %s (entry %d), waiting its turn", who, e.Into, e.ID)
	case wire.QueueRebasing:
		return fmt.Sprintf("%s is being rebased onto %s in its sandbox", who, e.Into)
	case wire.QueueChecking:
		return fmt.Sprintf("%s: the checks run on its work rebased onto %s", who, e.Into)
	case wire.QueueConflict:
		if e.Task == "" {
			tail := detailTail(e.Detail)
			if !strings.Contains(tail, "task drop") {
				tail += fmt.Sprintf("; `paddock task drop %d` gives up", e.ID)
			}
			return fmt.Sprintf("%s conflicts with %s on %s%s", who, e.Into, strings.Join(e.Conflicts, ", "), tail)
		}
		return fmt.Sprintf("%s conflicts with %s on %s: its agent was told; `paddock task drop %d` gives up", who, e.Into, strings.Join(e.Conflicts, ", "), e.ID)
	case wire.QueueLanded:
		return fmt.Sprintf("%s landed: %s is at %s", who, e.Into, shortCommit(e.Commit))
	case wire.QueueFailed:
		return fmt.Sprintf("%s did not land on %s: %s", who, e.Into, e.Detail)
	case wire.QueueDropped:
		return fmt.Sprintf("%s was dropped from the queue of %s", who, e.Into)
	case wire.QueuePR:
		if e.PR != nil {
			return fmt.Sprintf("%s: pull request #%d %s (%s)", who, e.PR.Number, e.PR.URL, e.PR.State)
		}
		return fmt.Sprintf("%s: pull request being opened", who)
	}
	return fmt.Sprintf("%s: %s", who, e.State)
}

// entryWho names what an entry lands: TASK/N, or a plain sandbox's SANDBOX:BRANCH.
func entryWho(e wire.QueueEntry) string {
	if e.Task == "" {
		return e.Sandbox + ":" + e.Branch
	}
	return fmt.Sprintf("%s/%d", e.Task, e.Attempt)
}

// detailTail is what a plain sandbox's conflict detail says after its files: who was
// told, or where to resolve it.
func detailTail(d string) string {
	if i := strings.Index(d, "; its agent"); i >= 0 {
		return d[i:]
	}
	if i := strings.Index(d, ": resolve it"); i >= 0 {
		return d[i:]
	}
	return ""
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

type taskQueueOptions struct {
	task string
	json bool
}

func newCmdTaskQueue(f *Factory) *cobra.Command {
	opts := &taskQueueOptions{}
	cmd := &cobra.Command{
		Use:   "queue [NAME]",
		Short: "The merge queue: every landing and pull request in order, or a task's",
		Args:  maxArgs(1, "at most a task's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.task = args[0]
			}
			return runTaskQueue(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func runTaskQueue(ctx context.Context, f *Factory, opts *taskQueueOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	es, err := c.Queue(ctx, opts.task)
	if err != nil {
		return err
	}
	tw, err := listing(f, opts.json, es, "the merge queue is empty: `paddock task land NAME` puts a task's best attempt in it",
		"ID\tATTEMPT\tREPO\tINTO\tSTATE\tAGE\tDETAIL")
	if tw == nil {
		return err
	}
	for _, e := range es {
		detail := e.Detail
		switch {
		case e.State == wire.QueueConflict && len(e.Conflicts) > 0:
			detail = "conflicts: " + strings.Join(e.Conflicts, ", ")
		case e.State == wire.QueueLanded:
			detail = "at " + shortCommit(e.Commit)
		case e.PR != nil:
			detail = fmt.Sprintf("#%d %s (%s)", e.PR.Number, e.PR.URL, e.PR.State)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, entryWho(e), e.Repo, e.Into, e.State,
			age(time.Since(e.Created)), firstLine(detail, 80))
	}
	return tw.Flush()
}

func newCmdTaskDrop(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "drop ID",
		Short: "Take an open entry out of the merge queue (its attempt stays)",
		Args:  exactArgs(1, "a queue entry's id (`paddock task queue` lists them)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return usagef("%q is not a queue entry's id: `paddock task queue` lists them", args[0])
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			e, err := c.DropEntry(cmd.Context(), id)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", entryLine(e))
			return nil
		},
	}
}

func newCmdTaskRm(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a task: its attempts' sandboxes, each after a final snapshot, then the task",
		Args:  exactArgs(1, "a task's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			err = c.RemoveTask(cmd.Context(), args[0], func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", step) })
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: removed task %s\n", args[0])
			return nil
		},
	}
}
