package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/synccmd"
	"github.com/paddockhq/paddock/internal/termtext"
)

type mergeOptions struct {
	name, branch string
	expect       string
	wip, yes     bool
	check, json  bool
	// queue puts the branch through the merge queue (mergequeue.go).
	queue, wait bool
	into        string
	runs        []string
}

func newCmdMerge(f *Factory) *cobra.Command {
	opts := &mergeOptions{}
	cmd := &cobra.Command{
		Use:   "merge SANDBOX [BRANCH] [--queue [--run CMD]... [--into BRANCH] [--wait]]",
		Short: "Sync, then merge the agent's branch into your current branch (fast-forward when it can)",
		Long: `Sync the sandbox (as paddock sync does), then merge the agent's branch into the host
repository's current branch: a fast-forward when it can, else a merge commit. BRANCH is one of
the sandbox's branches; without it, the branch its /workspace has checked out.

What was merged is said (commits, files, fast-forward or merge commit) with how to undo it.
Uncommitted work in the sandbox is not merged unless --wip is given (then its WIP commit, on
top of the branch, is merged too).

Refused (exit 2, nothing changed): uncommitted changes to your tracked files, a host in the
middle of a merge or rebase or on no branch, a branch the sandbox does not have. When the
agent's work changes files that run code on this machine once merged (git hooks, .envrc,
Makefiles, .vscode tasks, package.json scripts...), they are named first and the merge waits
for your yes (--yes to give it in a script). A merge that conflicts is aborted (exit 4).

The merge runs no git hooks (a hooks path inside the work tree would run the agent's own), and
is refused outright when the agent's .gitattributes names a filter, merge or diff driver your
git config defines: that program would run on the sandbox's files. Merge such work by hand.
While the merge queue is landing work on the same branch of the same repository, the merge is
refused (exit 4): wait for the entry (paddock task queue), or go through the queue too.

With --queue, the branch goes through the daemon's merge queue of the host repository and
branch (--into, default the host's current branch), the one tasks land through: it is rebased
onto that branch inside the sandbox (its uncommitted work committed first), the --run
commands run there on the result, and the branch is fast-forwarded only if they all pass.
Entries land one at a time, in order. A conflict is told to the sandbox's agent session, or
waits for you to rebase in the sandbox onto paddock/onto; paddock task queue shows the entry,
paddock task drop ID takes it out. --wait follows it until it lands (exit 0), fails (exit 1)
or conflicts (exit 4).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("merge takes a sandbox and, optionally, one of its branches (see `paddock merge --help`)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.name = args[0]
			if len(args) == 2 {
				opts.branch = args[1]
			}
			if opts.queue {
				return runMergeQueue(cmd.Context(), f, opts)
			}
			if opts.wait || opts.into != "" || len(opts.runs) > 0 {
				return usagef("--run, --into and --wait go with --queue")
			}
			return runMerge(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.wip, "wip", false, "merge the branch's uncommitted work in the sandbox too")
	cmd.Flags().BoolVarP(&opts.yes, "yes", "y", false, "merge without asking, even when files that run code on this machine change")
	cmd.Flags().BoolVar(&opts.check, "check", false, "sync and say what would be merged, merging nothing")
	cmd.Flags().StringVar(&opts.expect, "commit", "", "merge only if the branch is still at this `COMMIT` (the one --check showed); refused (exit 4) if it moved")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the merge (or with --check, the plan; with --queue, the queue entry) as JSON")
	cmd.Flags().BoolVar(&opts.queue, "queue", false, "land through the merge queue: rebased in the sandbox, checked, then fast-forwarded")
	cmd.Flags().StringArrayVar(&opts.runs, "run", nil, "with --queue: a shell `CMD` that must exit 0 in the sandbox on the rebased work (repeat for more)")
	cmd.Flags().StringVar(&opts.into, "into", "", "with --queue: the host `BRANCH` to land on (default: the host repository's current branch)")
	cmd.Flags().BoolVar(&opts.wait, "wait", false, "with --queue: follow the entry until it lands, fails or conflicts")
	return cmd
}

func runMerge(ctx context.Context, f *Factory, opts *mergeOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	info, err := c.Get(ctx, opts.name)
	if err != nil {
		return err
	}
	sb := syncSandbox(info)
	g, err := synccmd.HostRepo(ctx, sb, f.remote)
	if err != nil {
		return err
	}
	current, err := gitsync.CurrentBranch(ctx, synccmd.Stream(c.Client, sb.Name))
	if err != nil {
		return err
	}
	res, err := synccmd.Sync(ctx, c.Client, g, sb, f.IO.ErrOut)
	if err != nil {
		return err
	}
	if !opts.json {
		fmt.Fprintf(f.IO.ErrOut, "paddock: synced %s: %s\n", sb.Name, syncSummary(res))
	}
	plan, err := g.PlanMerge(ctx, gitsync.MergeRequest{Sandbox: sb.Name, Base: sb.BaseCommit, Branch: opts.branch, Current: current, WIP: opts.wip, Expect: opts.expect})
	if err != nil {
		return err
	}
	if !opts.check {
		if err := notBeingLanded(ctx, c, g.Repo, plan.Into); err != nil {
			return err
		}
	}
	if opts.check {
		if opts.json {
			return writeJSON(f, plan)
		}
		printPlan(f.IO.Out, plan)
		printRunsOnHost(f.IO.ErrOut, plan)
		printUncommitted(f.IO.ErrOut, plan)
		return nil
	}
	if plan.UpToDate() {
		if opts.json {
			return writeJSON(f, gitsync.MergeResult{MergePlan: plan, New: plan.Head})
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: %s already has everything on %s's %s: nothing to merge\n", plan.Into, sb.Name, termtext.Escape(plan.Branch))
		printUncommitted(f.IO.ErrOut, plan)
		return nil
	}
	if !opts.json {
		printPlan(f.IO.Out, plan)
	}
	if len(plan.RunsOnHost) > 0 && !opts.yes {
		printRunsOnHost(f.IO.ErrOut, plan)
		if f.NonInteractive || opts.json || !isTerminal(f.IO.In) || !isTerminal(f.IO.ErrOut) {
			return apperr.Invalid(fmt.Sprintf("read them (git show %s), then run it again with --yes", synccmd.Word(plan.Ref)),
				"not merged: the agent's work changes files that run code on this machine")
		}
		fmt.Fprintf(f.IO.ErrOut, "Merge anyway? [y/N] ")
		answer, _ := bufio.NewReader(f.IO.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return apperr.Invalid("", "not merged")
		}
	} else if len(plan.RunsOnHost) > 0 {
		printRunsOnHost(f.IO.ErrOut, plan)
	}
	done, err := g.Merge(ctx, plan, false)
	if err != nil {
		return err
	}
	noteMerge(ctx, f, c, sb.Name, done)
	if opts.json {
		return writeJSON(f, done)
	}
	how := fmt.Sprintf("merge commit %s", gitsync.Short(done.New))
	if done.FastForward {
		how = fmt.Sprintf("fast-forward from %s", gitsync.Short(done.Head))
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: merged %s's %s into %s (%s): %d commit(s), %d file(s)\n",
		sb.Name, termtext.Escape(done.Branch), done.Into, how, len(done.Commits), len(done.Files))
	fmt.Fprintf(f.IO.ErrOut, "to undo:   git reset --hard %s   (ORIG_HEAD)\n", gitsync.Short(done.Head))
	printUncommitted(f.IO.ErrOut, plan)
	return nil
}

// syncSummary says in a few words what a sync brought.
func syncSummary(res gitsync.Result) string {
	switch len(res.Updates) {
	case 0:
		return "nothing new"
	case 1:
		return "1 ref updated"
	}
	return fmt.Sprintf("%d refs updated", len(res.Updates))
}

// printPlan says what a merge brings: the commits and the files.
func printPlan(w io.Writer, p gitsync.MergePlan) {
	how := "a merge commit"
	if p.FastForward {
		how = "a fast-forward"
	}
	if p.UpToDate() {
		how = "nothing to merge"
	}
	fmt.Fprintf(w, "%s (%s) into %s, %s: %d commit(s), %d file(s)\n", termtext.Escape(p.Ref), gitsync.Short(p.Commit), p.Into, how, len(p.Commits), len(p.Files))
	for _, c := range p.Commits {
		fmt.Fprintf(w, "  %s\n", c)
	}
	for _, file := range p.Files {
		fmt.Fprintf(w, "    %s\n", file)
	}
}

// printRunsOnHost names the files a merge brings that run code on this machine.
func printRunsOnHost(w io.Writer, p gitsync.MergePlan) {
	if len(p.RunsOnHost) == 0 {
		return
	}
	fmt.Fprintf(w, "paddock: warning: the agent's work changes files that run code on this machine once merged; read them before merging:\n")
	for _, h := range p.RunsOnHost {
		fmt.Fprintf(w, "  %s (%s)\n", termtext.Escape(h.Path), h.Why)
	}
}

// printUncommitted says that the sandbox has uncommitted work the merge left out.
func printUncommitted(w io.Writer, p gitsync.MergePlan) {
	if p.Uncommitted {
		fmt.Fprintf(w, "paddock: the sandbox also has uncommitted work on %s (%s), not merged: add --wip to merge it too\n",
			termtext.Escape(p.Branch), termtext.Escape(p.WIPRef))
	}
}
