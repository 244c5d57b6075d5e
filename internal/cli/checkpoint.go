package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

type checkpointsOptions struct {
	json bool
}

func newCmdCheckpoints(f *Factory) *cobra.Command {
	opts := &checkpointsOptions{}
	cmd := &cobra.Command{
		Use:   "checkpoints SANDBOX[/SESSION] [--json]",
		Short: "List a sandbox's checkpoints: one at the end of each agent turn, and those taken by hand",
		Long: `List a sandbox's checkpoints, the oldest first: with /SESSION, that session's (and those
taken by hand with no session).

The daemon takes a checkpoint when a session's agent ends a turn (it is idle, waits for
an answer, or exits) and its files or conversation changed: the workspace as it is,
whatever changed it (the agent's edits, a shell command, a build), untracked files
included and ignored ones left out, with the conversation's position. TURN is the turn
number (#SEQ for a checkpoint taken by hand or kept by a rewind); FILES, +LINES and
-LINES what changed since the checkpoint before; PROMPT the first words of the message
that started the turn.

See a turn's changes with ` + "`paddock diff SANDBOX --turn N`" + `, go back to one with
` + "`paddock rewind`" + `, and take one by hand with ` + "`paddock checkpoint`" + `.`,
		Example: `  paddock checkpoints web/main
  paddock checkpoints web --json`,
		Args: exactArgs(1, "one SANDBOX[/SESSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheckpoints(cmd.Context(), f, args[0], opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the checkpoints as JSON")
	return cmd
}

func runCheckpoints(ctx context.Context, f *Factory, arg string, opts *checkpointsOptions) error {
	c, sb, session, err := clientAndTarget(ctx, f, arg, false)
	if err != nil {
		return err
	}
	cps, err := c.Checkpoints(ctx, sb, session)
	if err != nil {
		return err
	}
	if opts.json {
		if cps == nil {
			cps = []wire.Checkpoint{}
		}
		return writeJSON(f, cps)
	}
	if len(cps) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "paddock: %s has no checkpoints yet: one is taken at the end of each agent turn, or by hand with `paddock checkpoint %s`\n",
			arg, sb)
		return nil
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	if session == "" {
		fmt.Fprintln(tw, "SESSION\tTURN\tTIME\tFILES\t+LINES\t-LINES\tNAME\tPROMPT")
	} else {
		fmt.Fprintln(tw, "TURN\tTIME\tFILES\t+LINES\t-LINES\tNAME\tPROMPT")
	}
	for _, cp := range cps {
		turn := "#" + strconv.Itoa(cp.Seq)
		if cp.Kind == wire.CheckpointTurn {
			turn = strconv.Itoa(cp.Turn)
		}
		if session == "" {
			fmt.Fprintf(tw, "%s\t", dash(termtext.Escape(cp.Session)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t+%d\t-%d\t%s\t%s\n", turn, cp.Time.Local().Format("Jan _2 15:04:05"),
			cp.Files, cp.Added, cp.Deleted, dash(termtext.Escape(cp.Name)), dash(termtext.Escape(firstWords(cp.Prompt, 50))))
	}
	return tw.Flush()
}

// dash is s, or "-" when it is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// firstWords is s cut at about n characters, at a word's end.
func firstWords(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	if i := strings.LastIndexByte(string(r), ' '); i > n/2 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}

type checkpointOptions struct {
	session string
	name    string
	json    bool
}

func newCmdCheckpoint(f *Factory) *cobra.Command {
	opts := &checkpointOptions{}
	cmd := &cobra.Command{
		Use:   "checkpoint SANDBOX [--session S] [--name NAME] [--json]",
		Short: "Take a checkpoint of a sandbox's files (and a session's conversation) by hand",
		Long: `Take a checkpoint of the sandbox's workspace now, with the conversation of --session (or
of the sandbox's only session), as the daemon does at the end of each agent turn.

A checkpoint given a --name is never pruned, and ` + "`paddock rewind SANDBOX/SESSION --to NAME`" + `
goes back to it. Unnamed ones are pruned, the oldest first, past [checkpoints] keep
(200) and max_mb.`,
		Example: `  paddock checkpoint web --name before-refactor
  paddock checkpoint web --session main`,
		Args: exactArgs(1, "one SANDBOX"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheckpoint(cmd.Context(), f, args[0], opts)
		},
	}
	cmd.Flags().StringVar(&opts.session, "session", "", "the session whose conversation the checkpoint holds (default: the sandbox's only one)")
	cmd.Flags().StringVar(&opts.name, "name", "", "a `NAME` to go back to it by; a named checkpoint is never pruned")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the checkpoint as JSON")
	return cmd
}

func runCheckpoint(ctx context.Context, f *Factory, arg string, opts *checkpointOptions) error {
	sbArg, sess, _ := strings.Cut(arg, "/")
	if sess != "" {
		if opts.session != "" && opts.session != sess {
			return usagef("say the session once: %s or --session %s", arg, opts.session)
		}
		opts.session = sess
	}
	c, sb, _, err := clientAndTarget(ctx, f, sbArg, false)
	if err != nil {
		return err
	}
	cp, err := c.TakeCheckpoint(ctx, sb, wire.CheckpointRequest{Session: opts.session, Name: opts.name})
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(f, cp)
	}
	what := sb
	if cp.Session != "" {
		what += "/" + termtext.Escape(cp.Session)
	}
	name := ""
	if cp.Name != "" {
		name = " (" + termtext.Escape(cp.Name) + ")"
	}
	fmt.Fprintf(f.IO.Out, "checkpoint #%d%s of %s: %s +%d -%d\n", cp.Seq, name, what, plural(cp.Files, "file"), cp.Added, cp.Deleted)
	return nil
}

// runTurnDiff prints what a turn changed (from the checkpoint before it), or, with to,
// what changed from turn's checkpoint to to's.
func runTurnDiff(ctx context.Context, f *Factory, arg, turn, to string, stat bool) error {
	c, sb, session, err := clientAndTarget(ctx, f, arg, false)
	if err != nil {
		return err
	}
	from := ""
	if to != "" {
		from, turn = turn, to
	}
	d, err := c.CheckpointDiff(ctx, sb, session, from, turn, stat)
	if err != nil {
		return err
	}
	out, flush := diffOutput(f.IO.Out)
	_, err = io.WriteString(out, d)
	if ferr := flush(); err == nil {
		err = ferr
	}
	return err
}
