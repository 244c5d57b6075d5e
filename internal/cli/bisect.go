package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

type bisectOptions struct {
	check string
	json  bool
}

func newCmdBisect(f *Factory) *cobra.Command {
	opts := &bisectOptions{}
	cmd := &cobra.Command{
		Use:   "bisect SANDBOX[/SESSION] --check CMD [--json]",
		Short: "Find the first turn of a session after which a check fails, with that turn's prompt and diff",
		Long: `Run a check (a shell command: exit 0 is good) on the checkpoints of a session's turns
and find the first turn after which it fails: the newest turn first, then halving the
range, as git bisect does, the turns before the first failing one taken to pass.

Each try runs in a scratch copy of the turn's files under /tmp in the sandbox, never in
/workspace: the running agent's files, index and HEAD are left as they are. The copy
holds what the checkpoint holds, so files git ignores (dependencies, build outputs) are
not in it: a check that needs them makes them. A try is stopped after 10 minutes.

The answer is the first bad turn with the prompt that started it, the last good turn
before it, and what the turn changed (its diff stat and diff). When the check passes at
the newest turn there is nothing to bisect, and bisect says so (exit 0).`,
		Example: `  paddock bisect web/fix-auth --check 'go test ./auth/...'
  paddock bisect web --check 'npm ci && npm test' --json`,
		Args: exactArgs(1, "one SANDBOX[/SESSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBisect(cmd.Context(), f, args[0], opts)
		},
	}
	cmd.Flags().StringVar(&opts.check, "check", "", "the shell `CMD` that passes (exit 0) on good work, run in a copy of each turn's files")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the result as JSON")
	return cmd
}

func runBisect(ctx context.Context, f *Factory, arg string, opts *bisectOptions) error {
	if strings.TrimSpace(opts.check) == "" {
		return usagef("bisect needs --check CMD: a shell command that exits 0 on good work, e.g. --check 'go test ./...'")
	}
	c, sb, session, err := clientAndTarget(ctx, f, arg, true)
	if err != nil {
		return err
	}
	progress := func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", termtext.Escape(step)) }
	if opts.json {
		progress = nil
	}
	res, err := c.Bisect(ctx, sb, session, wire.BisectRequest{Check: opts.check}, progress)
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(f, res)
	}
	printBisect(f.IO.Out, &res)
	return nil
}

// printBisect writes a bisect's answer for a person: the first bad turn and its prompt,
// the check's output there, the good turn before it, and what the turn changed.
func printBisect(w io.Writer, res *wire.BisectResult) {
	if res.FirstBad == nil {
		fmt.Fprintln(w, termtext.Escape(res.Note))
		return
	}
	bad := res.FirstBad
	fmt.Fprintf(w, "first bad turn: %d — %s\n", bad.Turn, termtext.Escape(promptLine(bad.Prompt)))
	for _, st := range res.Steps {
		if st.Seq == bad.Seq && strings.TrimSpace(st.Output) != "" {
			fmt.Fprintf(w, "the check's output there (exit %d):\n", st.Exit)
			for line := range strings.SplitSeq(strings.TrimRight(st.Output, "\n"), "\n") {
				fmt.Fprintf(w, "    %s\n", termtext.Escape(line))
			}
		}
	}
	if res.Good != nil {
		fmt.Fprintf(w, "last good turn: %d — %s\n", res.Good.Turn, termtext.Escape(promptLine(res.Good.Prompt)))
	} else {
		fmt.Fprintln(w, termtext.Escape(res.Note))
	}
	if res.DiffStat != "" || res.Diff != "" {
		fmt.Fprintf(w, "\nwhat turn %d changed:\n", bad.Turn)
		io.WriteString(w, termtext.Escape(res.DiffStat))
		if res.Diff != "" {
			fmt.Fprintln(w)
			io.WriteString(w, termtext.Escape(res.Diff))
		}
	}
}

// promptLine is a turn's prompt on one line, "(no prompt)" when it has none.
func promptLine(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(no prompt)"
	}
	return firstLine(s, 100)
}
