package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

type rewindOptions struct {
	to   string
	json bool
}

func newCmdRewind(f *Factory) *cobra.Command {
	opts := &rewindOptions{}
	cmd := &cobra.Command{
		Use:   "rewind SANDBOX[/SESSION] --to N [--json]",
		Short: "Put a session's files and conversation back to after turn N (undoable)",
		Long: `Put the sandbox's workspace and the session's conversation back to a checkpoint:
after turn N of the session (--to 3), a checkpoint by its number (--to '#12') or by its
name (--to before-refactor, --to undo-9).

The files come back as they were: changed and deleted files restored, files made since
deleted, HEAD and the checked-out branch back where they were (a commit made since is
undone), and what was uncommitted then is uncommitted again. Files git ignores, and the
paths [checkpoints] exclude names, are left as they are. Nothing outside /workspace is
written, and no file is written through a symbolic link.

A running agent is stopped first and started again on the conversation as it was at that
point; its next turn is turn N+1. The state before the rewind is kept as a checkpoint
named undo-SEQ: rewind to it to undo the rewind.`,
		Example: `  paddock rewind web/main --to 3
  paddock rewind web/main --to undo-9`,
		Args: exactArgs(1, "one SANDBOX[/SESSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRewind(cmd.Context(), f, args[0], opts)
		},
	}
	cmd.Flags().StringVar(&opts.to, "to", "", "the checkpoint to go back to: a turn `N`, #SEQ or a checkpoint's name")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the result as JSON")
	return cmd
}

func runRewind(ctx context.Context, f *Factory, arg string, opts *rewindOptions) error {
	if strings.TrimSpace(opts.to) == "" {
		return usagef("rewind needs --to: a turn number, #SEQ or a checkpoint's name (see them with `paddock checkpoints %s`)", arg)
	}
	c, sb, session, err := clientAndTarget(ctx, f, arg, true)
	if err != nil {
		return err
	}
	res, err := c.Rewind(ctx, sb, session, wire.RewindRequest{To: opts.to})
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(f, res)
	}
	target := sb + "/" + session
	fmt.Fprintf(f.IO.Out, "rewound %s to %s (%s); undo with `paddock rewind %s --to %s`\n",
		target, rewoundTo(res.To), plural(res.Files, "file"), target, termtext.Escape(res.Undo.Name))
	if res.Note != "" {
		fmt.Fprintf(f.IO.Out, "%s\n", termtext.Escape(res.Note))
	}
	return nil
}

// rewoundTo names a checkpoint as the user would have asked for it: "turn 3", or
// "#12 (name)".
func rewoundTo(cp wire.Checkpoint) string {
	if cp.Kind == wire.CheckpointTurn && cp.Turn > 0 {
		return fmt.Sprintf("turn %d", cp.Turn)
	}
	if cp.Name != "" {
		return fmt.Sprintf("#%d (%s)", cp.Seq, termtext.Escape(cp.Name))
	}
	return fmt.Sprintf("#%d", cp.Seq)
}
