package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
)

type forkOptions struct {
	backend string
	count   int
	json    bool
}

func newCmdFork(f *Factory) *cobra.Command {
	opts := &forkOptions{}
	cmd := &cobra.Command{
		Use:   "fork SANDBOX[/SESSION][@CHECKPOINT] NEW [--backend NAME] [--count K] [--json]",
		Short: "Make new sandboxes with a sandbox's files and conversation at a checkpoint",
		Long: `Make a new sandbox (or K of them, NEW-1 … NEW-K, made at once) with the workspace
of SANDBOX and its session's conversation as they were at a checkpoint: @N is the
newest checkpoint of turn N, @#SEQ a checkpoint's number, @NAME a named one (see
paddock checkpoints SANDBOX); without @, a checkpoint taken now. The session starts
again in each fork, its agent resuming the conversation from there.

A fork is a sandbox of its own, on its parent's backend or another (--backend): its own
placeholder key (the parent's does not work there, nor its in the parent), machine id
and hostname, and no file shared with its parent. Files git ignores (dependencies,
build output) come as they are in the parent now; everything else is the checkpoint's.
To fork a conversation inside the same sandbox instead, use paddock chat --fork.`,
		Example: `  paddock fork api/fix-auth@3 try       # api's files and fix-auth's conversation after turn 3
  paddock fork api try --backend docker  # api as it is now, in a docker container
  paddock fork api@#12 try --count 4     # try-1 … try-4 from checkpoint #12`,
		Args: exactArgs(2, "a sandbox (SANDBOX[/SESSION][@CHECKPOINT]) and a new name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFork(cmd.Context(), f, args[0], args[1], opts)
		},
	}
	cmd.Flags().StringVar(&opts.backend, "backend", "", "the new sandboxes' backend (default: the parent's)")
	cmd.Flags().IntVar(&opts.count, "count", 1, "how many sandboxes to make, NEW-1 … NEW-K (at most 8)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the result as JSON")
	return cmd
}

// parseForkSource splits SANDBOX[/SESSION][@CHECKPOINT].
func parseForkSource(arg string) (sandbox, session, at string, err error) {
	src, at, hasAt := strings.Cut(arg, "@")
	if hasAt && at == "" {
		return "", "", "", usagef("name a checkpoint after @: a turn number, #SEQ or a name (see `paddock checkpoints %s`)", src)
	}
	sandbox, session, _ = strings.Cut(src, "/")
	if sandbox == "" {
		return "", "", "", usagef("name the sandbox to fork: SANDBOX[/SESSION][@CHECKPOINT]")
	}
	return sandbox, session, at, nil
}

func runFork(ctx context.Context, f *Factory, source, name string, opts *forkOptions) error {
	sandbox, session, at, err := parseForkSource(source)
	if err != nil {
		return err
	}
	if opts.count < 1 || opts.count > 8 {
		return usagef("--count takes 1 to 8")
	}
	count := opts.count
	if count == 1 {
		count = 0
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := c.Fork(ctx, sandbox, wire.ForkRequest{Session: session, At: at, New: name, Backend: opts.backend, Count: count},
		func(step string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", step) })
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(f, res)
	}
	for _, sb := range res.Sandboxes {
		fmt.Fprintln(f.IO.Out, sb)
	}
	from := fmt.Sprintf("checkpoint #%d", res.From.Seq)
	if res.From.Turn > 0 {
		from += fmt.Sprintf(" (turn %d)", res.From.Turn)
	}
	next := "`paddock chat " + res.Sandboxes[0]
	if len(res.Sessions) > 0 {
		next += "/" + res.Sessions[0]
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: forked %s at %s into %s in %.1fs; attach with %s`\n",
		sandbox, from, strings.Join(res.Sandboxes, ", "), time.Since(start).Seconds(), next)
	return nil
}
