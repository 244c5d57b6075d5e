package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/termtext"
)

func newCmdDiff(f *Factory) *cobra.Command {
	var stat bool
	var turn, to string
	cmd := &cobra.Command{
		Use:   "diff [SANDBOX[/SESSION]] [--turn N [--to M]] [-- PATHSPEC...]",
		Short: "The agent's changes (committed or not) against the commit the sandbox started from",
		Long: `The agent's changes, committed or not, against the commit the sandbox started from.

To read them, diff fetches the sandbox's work as sync does: its branches and its uncommitted work
(a commit made without touching the agent's working tree or index) land in
refs/paddock/SANDBOX/* of the host repository. It writes nothing else (not your working tree,
branches or index), and does not count as a sync: the next ` + "`paddock sync`" + ` still reports
everything new since the last sync, what diff fetched included.

With --turn N, what a turn of an agent changed instead: the files of the checkpoint taken
at its end against the checkpoint before it (see them with ` + "`paddock checkpoints`" + `);
SANDBOX/SESSION says whose turn N. With --to M, from turn N's checkpoint to turn M's.
N and M may also be #SEQ or a checkpoint's name.`,
		Example: `  paddock diff web
  paddock diff web/main --turn 3
  paddock diff web/main --turn 2 --to 5 --stat`,
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
			if to != "" && turn == "" {
				return usagef("--to M goes with --turn N: paddock diff SANDBOX --turn N --to M")
			}
			if turn != "" {
				if len(pathspec) > 0 {
					return usagef("--turn shows a whole turn: leave out -- and paths")
				}
				return runTurnDiff(ctx, f, name, turn, to, stat)
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
			diffArgs := gitsync.DiffArgs(name, info.BaseCommit, stat)
			out, flush := diffOutput(f.IO.Out)
			err = g.RunTo(ctx, out, append(diffArgs, pathspec...)...)
			if ferr := flush(); err == nil {
				err = ferr
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&stat, "stat", false, "a summary of the changed files")
	cmd.Flags().StringVar(&turn, "turn", "", "what turn `N` of the agent changed (or #SEQ, or a checkpoint's name)")
	cmd.Flags().StringVar(&to, "to", "", "with --turn N: from turn N's checkpoint to turn `M`'s")
	return cmd
}

// diffOutput is where `paddock diff` has git write the diff. To a terminal, control
// characters but newline and tab are shown as \xNN: the diff holds whatever the
// sandbox's files hold, an escape sequence included (git is asked for no colour, so
// none of them is git's). To a file or a pipe the bytes go as they are, so
// `paddock diff SB > x.patch` is a patch git applies. flush ends the output.
func diffOutput(out io.Writer) (w io.Writer, flush func() error) {
	if !isTerminal(out) {
		return out, func() error { return nil }
	}
	e := termtext.NewWriter(out)
	return e, e.Flush
}
