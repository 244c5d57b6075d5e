package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/synccmd"
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
sync prints the git command to merge or check out what arrived (` + "`paddock merge`" + ` syncs and
merges in one step). It says what is new since the last sync, whatever else fetched in between
(paddock diff fetches into the same refs).

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
	sb, err := synccmd.Get(ctx, c.Client, name)
	if err != nil {
		return err
	}
	return synccmd.Run(ctx, c.Client, sb, f.remote, opts.json, f.IO.Out, f.IO.ErrOut)
}
