package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/termtext"
)

type syncOptions struct {
	name    string
	files   []string
	force   bool
	json    bool
	mode    string
	history bool
}

func newCmdSync(f *Factory) *cobra.Command {
	opts := &syncOptions{}
	cmd := &cobra.Command{
		Use:   "sync [SANDBOX] [--files PATH...]",
		Short: "Fetch the agent's work into the host repository (refs/paddock/SANDBOX/*); says what arrived",
		Long: `Fetch every branch of the sandbox, and its uncommitted and untracked work (as a commit on
refs/paddock/SANDBOX/wip, made without touching the agent's working tree or index), into the host
repository under refs/paddock/SANDBOX/. Nothing is written to your working tree or current branch:
sync prints the git command to merge or check out what arrived.

With --files, copy files that are not in git (build outputs, reports) out of /workspace into the
same paths of the host repository; an existing host file is never overwritten without --force.`,
		Args: maxArgs(1, "at most one sandbox"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.name = args[0]
			}
			return runSync(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringSliceVar(&opts.files, "files", nil, "copy these /workspace paths (files or directories) out, instead of git")
	cmd.Flags().BoolVar(&opts.force, "force", false, "with --files: overwrite existing host files")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print what arrived as JSON")
	cmd.Flags().StringVar(&opts.mode, "mode", "", "set the sandbox's sync mode: manual, on-commit (when a branch moves) or on-idle (when an agent finishes a turn)")
	cmd.Flags().BoolVar(&opts.history, "history", false, "list the recorded syncs")
	return cmd
}

func runSync(ctx context.Context, f *Factory, opts *syncOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	name, err := resolveSandbox(ctx, f, c, opts.name)
	if err != nil {
		return err
	}
	switch {
	case opts.mode != "":
		info, err := c.SetSyncMode(ctx, name, opts.mode)
		if err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: sandbox %s syncs %s\n", info.Name, map[string]string{
			"manual": "when you run `paddock sync`", "on-commit": "whenever a branch in it moves",
			"on-idle": "whenever an agent in it finishes a turn"}[info.SyncMode])
		return nil
	case opts.history:
		list, err := c.Syncs(ctx, name)
		if err != nil {
			return err
		}
		if opts.json {
			return writeJSON(f, list)
		}
		for _, s := range list {
			// The result names the sandbox's refs and commits; JSON leaves C1 characters as they are.
			fmt.Fprintf(f.IO.Out, "%s %s\n", s.Time.Format("2006-01-02 15:04:05"), termtext.Escape(string(s.Result)))
		}
		return nil
	case len(opts.files) > 0:
		return syncFiles(ctx, f, c, name, opts)
	}
	info, g, res, err := fetchWork(ctx, f, c, name)
	if err != nil {
		return err
	}
	hostCode := g.RunsOnHost(ctx, res, info.BaseCommit)
	if err := c.RecordSync(ctx, name, struct {
		gitsync.Result
		Mode string `json:"mode"`
	}{res, "manual"}); err != nil {
		fmt.Fprintf(f.IO.ErrOut, "paddock: warning: the sync was not recorded: %v\n", err)
	}
	if opts.json {
		return writeJSON(f, struct {
			gitsync.Result
			RunsOnHost []gitsync.HostCode `json:"runs_on_host"`
		}{res, append([]gitsync.HostCode{}, hostCode...)})
	}
	if len(res.Updates) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "paddock: nothing new in %s\n", name)
		return nil
	}
	ns := gitsync.Namespace(name)
	for _, u := range res.Updates {
		what := "updated"
		if u.Old == "" {
			what = "new"
		}
		fmt.Fprintf(f.IO.Out, "%s (%s): %d commit(s), %d file(s)\n", termtext.Escape(u.Ref), what, len(u.Commits), len(u.Files))
		for _, c := range u.Commits {
			fmt.Fprintf(f.IO.Out, "  %s\n", c)
		}
		for _, file := range u.Files {
			fmt.Fprintf(f.IO.Out, "    %s\n", file)
		}
	}
	if len(hostCode) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "\npaddock: warning: the agent's work changes files that run code on this machine once merged; read them before merging:\n")
		for _, h := range hostCode {
			fmt.Fprintf(f.IO.ErrOut, "  %s: %s (%s)\n", termtext.Escape(strings.TrimPrefix(h.Ref, ns)), termtext.Escape(h.Path), h.Why)
		}
	}
	fmt.Fprintf(f.IO.ErrOut, "\nto look:   git log -p %s\n", suggestWord(short(info.BaseCommit)+".."+ns+gitsync.WIPBranch))
	for _, u := range res.Updates {
		branch := strings.TrimPrefix(u.Ref, ns)
		if branch == gitsync.WIPBranch || strings.HasPrefix(branch, gitsync.WIPBranch+"-") {
			continue
		}
		fmt.Fprintf(f.IO.ErrOut, "to merge:  git merge %s\nor review: git switch -c %s %s\n",
			suggestWord(u.Ref), suggestWord("review-"+strings.ReplaceAll(branch, "/", "-")), suggestWord(u.Ref))
		break
	}
	return nil
}

// suggestWord is one word of a command the user is told to run, made safe to print
// and to paste: the sandbox names its branches, and a branch named
// "x;touch${IFS}/tmp/pwned" must stay one argument to git. It is quoted for the shell
// when it needs to be, then escaped, so a control character shows as \xNN inside the
// quotes.
func suggestWord(s string) string { return termtext.Escape(shellWord(s)) }
