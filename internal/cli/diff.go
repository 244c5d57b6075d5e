package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/gitsync"
)

func newCmdDiff(f *Factory) *cobra.Command {
	var stat bool
	cmd := &cobra.Command{
		Use:   "diff [SANDBOX] [-- PATHSPEC...]",
		Short: "The agent's changes (committed or not) against the commit the sandbox started from",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name, pathspec := "", []string(nil)
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				pathspec = args[dash:]
				args = args[:dash]
			}
			if len(args) > 1 {
				return usagef("diff takes one sandbox name, then -- and paths")
			}
			if len(args) == 1 {
				name = args[0]
			}
			c, err := f.Client(ctx)
			if err != nil {
				return err
			}
			if name, err = resolveSandbox(ctx, f, c, name); err != nil {
				return err
			}
			info, g, _, err := fetchWork(ctx, f, c, name)
			if err != nil {
				return err
			}
			diffArgs := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color"}
			if stat {
				diffArgs = append(diffArgs, "--stat")
			}
			diffArgs = append(diffArgs, info.BaseCommit, gitsync.Namespace(name)+gitsync.WIPBranch, "--")
			out, err := g.Run(ctx, append(diffArgs, pathspec...)...)
			if err != nil {
				return err
			}
			fmt.Fprint(f.IO.Out, out)
			return nil
		},
	}
	cmd.Flags().BoolVar(&stat, "stat", false, "a summary of the changed files")
	return cmd
}
