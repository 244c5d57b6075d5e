package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/termtext"
)

type runOptions struct {
	target      string
	prompt      string
	newSandbox  bool
	backend     string
	resume      string
	interactive bool
	model       string
	maxTurns    int
	maxTokens   int64
	detach      bool
	json        bool
}

func newCmdRun(f *Factory) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run SANDBOX [PROMPT] | run --new PATH [PROMPT]",
		Short: "Run paddock's own agent on a sandbox: the model loop on the host, its tools in the sandbox",
		Long: `Run paddock's own coding agent on a sandbox. The model loop runs in the daemon, on the
host, with the key of the config's provider ([run] provider, anthropic by default); the
model's tools (run_command, read_file, write_file, edit_file, list_files, search_files)
act in the sandbox through its guest agent. The key never enters the sandbox, every tool
call is recorded, and the sandbox needs no agent CLI.

  paddock run myrepo "make the failing test pass"     stream the work; Ctrl-C cancels it
  paddock run --new ~/src/myrepo "..."                 make a sandbox for the run first
  paddock run myrepo --resume r1a2b3c4d5 "now add a test"   continue a run's conversation
  paddock run myrepo -i                                a conversation in the terminal
  paddock runs; paddock run show ID                    every run, each tool call

Without PROMPT, standard input is the prompt. The run lives in the daemon: --detach
returns once it has started, and ` + "`paddock run follow ID`" + ` streams it again.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("give a sandbox (or, with --new, a path or git URL) and a prompt")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.target = args[0]
			if len(args) == 2 {
				opts.prompt = args[1]
			}
			return runRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.newSandbox, "new", false, "make a sandbox for the run from PATH or GIT-URL (as paddock up does)")
	fl.StringVar(&opts.backend, "backend", "", "with --new: the backend to run on")
	fl.StringVar(&opts.resume, "resume", "", "continue this run's conversation (an id from paddock runs)")
	fl.BoolVarP(&opts.interactive, "interactive", "i", false, "a conversation: read one prompt a line, until EOF or \"exit\"")
	fl.StringVar(&opts.model, "model", "", "the model (default: [run] model in the config)")
	fl.IntVar(&opts.maxTurns, "max-turns", 0, "stop after this many model calls (default: [run] max_turns, else 200)")
	fl.Int64Var(&opts.maxTokens, "max-tokens", 0, "stop once the model calls used this many tokens, input and output (default: [run] max_tokens, else none)")
	fl.BoolVar(&opts.detach, "detach", false, "print the run's id once it has started, and leave it working")
	fl.BoolVar(&opts.json, "json", false, "print each event as a JSON line (NDJSON) instead of text")
	cmd.AddCommand(newCmdRunShow(f), newCmdRunCancel(f), newCmdRunFollow(f))
	return cmd
}

func runRun(ctx context.Context, f *Factory, opts *runOptions) error {
	if opts.maxTurns < 0 || opts.maxTokens < 0 {
		return usagef("--max-turns and --max-tokens cannot be negative")
	}
	if opts.interactive && (opts.detach || opts.json) {
		return usagef("-i talks in the terminal: it takes neither --detach nor --json")
	}
	if opts.prompt == "" && !opts.interactive {
		if isTerminal(f.IO.In) {
			return usagef("give a prompt: paddock run %s \"what to do\" (or -i for a conversation)", opts.target)
		}
		data, err := io.ReadAll(f.IO.In)
		if err != nil {
			return err
		}
		if opts.prompt = strings.TrimSpace(string(data)); opts.prompt == "" {
			return usagef("the prompt on standard input is empty")
		}
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	var name string
	if opts.newSandbox {
		if opts.resume != "" {
			return usagef("--new makes a sandbox; --resume continues a run on its own: give one of them")
		}
		if name, err = newRunSandbox(ctx, f, c, opts); err != nil {
			return err
		}
	} else {
		if opts.backend != "" {
			return usagef("--backend goes with --new")
		}
		if name, err = resolveSandbox(ctx, f, c, opts.target); err != nil {
			return err
		}
		// "-" names no session: the sandbox is started, its sessions left as they are.
		if err := wake(ctx, f, c, name, "-"); err != nil {
			return err
		}
	}
	if opts.resume != "" {
		d, err := c.Run(ctx, opts.resume)
		if err != nil {
			return err
		}
		if d.Sandbox != name {
			return usagef("run %s works on sandbox %s, not %s: paddock run %s --resume %s", d.ID, d.Sandbox, name, d.Sandbox, d.ID)
		}
		opts.resume = d.ID
	}
	req := wire.RunRequest{Model: opts.model, RunBudget: wire.RunBudget{MaxTurns: opts.maxTurns, MaxTokens: opts.maxTokens}}
	id := opts.resume
	if !opts.interactive {
		req.Prompt = opts.prompt
		_, err := prompt(ctx, f, c, name, id, req, opts)
		return err
	}
	in := bufio.NewScanner(f.IO.In)
	in.Buffer(make([]byte, 64<<10), 4<<20)
	for {
		fmt.Fprint(f.IO.ErrOut, "> ")
		if !in.Scan() {
			fmt.Fprintln(f.IO.ErrOut)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		if line == "exit" || line == "quit" {
			return nil
		}
		if line == "" {
			continue
		}
		req.Prompt = line
		r, err := prompt(ctx, f, c, name, id, req, opts)
		if r.ID != "" {
			id = r.ID
		}
		if ctx.Err() != nil {
			return err
		}
		if err != nil && r.ID == "" {
			return err
		}
	}
}

// newRunSandbox makes the sandbox of `run --new`: named after the project, with a
// suffix when that name is taken.
func newRunSandbox(ctx context.Context, f *Factory, c *client.Client, opts *runOptions) (string, error) {
	up := &upOptions{target: opts.target, backend: opts.backend, network: "closed"}
	limits, err := checkUpFlags(up)
	if err != nil {
		return "", err
	}
	repo, url, src, err := resolveSource(ctx, f, up)
	if err != nil {
		return "", err
	}
	if _, err := c.Get(ctx, up.name); err == nil {
		b := make([]byte, 2)
		rand.Read(b)
		up.name += "-run-" + hex.EncodeToString(b)
	}
	info, err := createSandbox(ctx, f, c, up, limits, repo, url, src)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: made sandbox %s for the run\n", info.Name)
	return info.Name, nil
}

// prompt runs one prompt, streaming its events, and returns the run as it ended. Ctrl-C
// (ctx done) cancels the run, which then ends as cancelled.
func prompt(ctx context.Context, f *Factory, c *client.Client, name, id string, req wire.RunRequest, opts *runOptions) (wire.Run, error) {
	follow, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	p := &runPrinter{f: f, json: opts.json}
	var mu sync.Mutex
	runID := id
	cancelled := false
	go func() {
		select {
		case <-ctx.Done():
		case <-follow.Done():
			return
		}
		mu.Lock()
		cancelled = true
		rid := runID
		mu.Unlock()
		if rid == "" {
			stop()
			return
		}
		fmt.Fprintf(f.IO.ErrOut, "\npaddock: cancelling run %s\n", rid)
		if _, err := c.CancelRun(follow, rid); err != nil && apperr.KindOf(err) != apperr.KindConflict {
			fmt.Fprintf(f.IO.ErrOut, "paddock: cancel run %s: %v\n", rid, err)
		}
	}()
	detached := false // events read after --detach let go are not printed
	r, err := c.StartRun(follow, name, id, req, func(ev wire.RunEvent) {
		if detached {
			return
		}
		if ev.Type == "started" && ev.Run != nil {
			mu.Lock()
			runID = ev.Run.ID
			mu.Unlock()
		}
		p.event(ev)
		if opts.detach && ev.Type == "started" {
			detached = true
			stop()
		}
	})
	if opts.detach && runID != "" {
		fmt.Fprintln(f.IO.Out, runID)
		fmt.Fprintf(f.IO.ErrOut, "paddock: run %s works on %s in the background\nnext: paddock run follow %s\n", runID, name, runID)
		return wire.Run{ID: runID}, nil
	}
	if err != nil {
		mu.Lock()
		c := cancelled
		mu.Unlock()
		if c {
			return r, ctx.Err()
		}
		return r, err
	}
	return r, runOutcome(r)
}

// runOutcome is the error of a run that did not finish its work.
func runOutcome(r wire.Run) error {
	switch r.Status {
	case wire.RunDone:
		return nil
	case wire.RunStopped:
		return &exitError{code: 1}
	case wire.RunCancelled:
		return &exitError{code: 130}
	}
	return &exitError{code: 1}
}

// runPrinter shows a run's events: the model's text on stdout, the tool calls and the
// summary on stderr; or each event as a JSON line.
type runPrinter struct {
	f      *Factory
	json   bool
	inText bool // the last thing printed was model text without its newline
	output bool // a command's output is being shown
}

func (p *runPrinter) endText() {
	if p.inText {
		fmt.Fprintln(p.f.IO.Out)
		p.inText = false
	}
}

func (p *runPrinter) event(ev wire.RunEvent) {
	if p.json {
		data, _ := json.Marshal(ev)
		fmt.Fprintf(p.f.IO.Out, "%s\n", data)
		return
	}
	errOut := p.f.IO.ErrOut
	switch ev.Type {
	case "started":
		fmt.Fprintf(errOut, "paddock: run %s on %s (%s)\n", ev.Run.ID, ev.Run.Sandbox, ev.Run.Model)
	case "text":
		fmt.Fprint(p.f.IO.Out, termtext.Escape(ev.Text))
		p.inText = !strings.HasSuffix(ev.Text, "\n")
	case "retry":
		p.endText()
		fmt.Fprintf(errOut, "paddock: %s\n", termtext.Escape(ev.Text))
	case "tool":
		p.endText()
		fmt.Fprintf(errOut, "> %s %s\n", ev.Tool, termtext.Escape(toolSummary(ev.Tool, ev.Input)))
		p.output = false
	case "output":
		for _, line := range strings.SplitAfter(ev.Text, "\n") {
			if line == "" {
				continue
			}
			if !p.output {
				fmt.Fprint(errOut, "  | ")
			}
			fmt.Fprint(errOut, termtext.Escape(strings.TrimSuffix(line, "\n")))
			p.output = !strings.HasSuffix(line, "\n")
			if !p.output {
				fmt.Fprintln(errOut)
			}
		}
	case "tool-done":
		if p.output {
			fmt.Fprintln(errOut)
			p.output = false
		}
		mark := "<"
		if ev.IsError {
			mark = "< error:"
		}
		fmt.Fprintf(errOut, "  %s %s (%s)\n", mark, termtext.Escape(resultSummary(ev.Tool, ev.Text, ev.IsError)), ev.Duration.Round(time.Millisecond))
	case "finished":
		p.endText()
		r := ev.Run
		fmt.Fprintf(errOut, "paddock: run %s %s: %d turn(s), %d tool call(s), %s tokens in (%s from cache), %s out\n",
			r.ID, r.Status, r.Turns, r.ToolCalls, count(r.InputTokens+r.CacheReadTokens+r.CacheWriteTokens), count(r.CacheReadTokens), count(r.OutputTokens))
		if r.Error != "" {
			fmt.Fprintf(errOut, "paddock: %s\n", termtext.Escape(r.Error))
		}
	}
}

// count prints a token count shortly: 950, 12.3k, 1.2M.
func count(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// toolSummary is a tool call's input in one line.
func toolSummary(tool string, input json.RawMessage) string {
	var in map[string]any
	json.Unmarshal(input, &in)
	pick := func(keys ...string) string {
		var parts []string
		for _, k := range keys {
			if v, ok := in[k]; ok && v != "" && v != nil {
				parts = append(parts, fmt.Sprint(v))
			}
		}
		return strings.Join(parts, " ")
	}
	s := string(input)
	switch tool {
	case "run_command":
		s = pick("command")
	case "read_file", "write_file", "edit_file", "list_files":
		s = pick("path")
	case "search_files":
		s = pick("pattern", "path")
	}
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:119]) + "…"
	}
	return s
}

// resultSummary is a tool's answer in one line: a command's last line (its exit code),
// how many lines a read, listing or search gave, or the first line of anything else and
// of every error.
func resultSummary(tool, text string, isError bool) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	s := lines[0]
	switch {
	case tool == "run_command":
		s = lines[len(lines)-1]
	case isError:
	case tool == "read_file" || tool == "list_files" || tool == "search_files":
		s = fmt.Sprintf("%d line(s)", len(lines))
	}
	if r := []rune(s); len(r) > 120 {
		s = string(r[:119]) + "…"
	}
	return s
}

func newCmdRunShow(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: its prompts, each model turn and each tool call with its whole output",
		Args:  exactArgs(1, "one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			d, err := c.Run(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f, d)
			}
			out := f.IO.Out
			fmt.Fprintf(out, "run %s on %s (%s, %s): %s\n", d.ID, d.Sandbox, d.Provider, d.Model, d.Status)
			if d.Error != "" {
				fmt.Fprintf(out, "  %s\n", termtext.Escape(d.Error))
			}
			fmt.Fprintf(out, "%d turn(s), %d tool call(s); tokens: %d in, %d from cache, %d to cache, %d out\n\n",
				d.Turns, d.ToolCalls, d.InputTokens, d.CacheReadTokens, d.CacheWriteTokens, d.OutputTokens)
			for _, st := range d.Steps {
				at := st.Started.Format("15:04:05")
				switch st.Kind {
				case "prompt":
					fmt.Fprintf(out, "%s prompt:\n%s\n", at, indent(st.Input))
				case "turn":
					fmt.Fprintf(out, "%s model (%s; %d in, %d from cache, %d out):\n", at, st.Duration.Round(time.Millisecond),
						st.InputTokens, st.CacheReadTokens, st.OutputTokens)
					if st.Output != "" {
						fmt.Fprintf(out, "%s\n", indent(st.Output))
					}
				case "tool":
					status := "ok"
					if st.IsError {
						status = "error"
					}
					fmt.Fprintf(out, "%s %s %s (%s, %s):\n%s\n", at, st.Name, termtext.Escape(st.Input), status,
						st.Duration.Round(time.Millisecond), indent(st.Output))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func indent(s string) string {
	s = termtext.Escape(strings.TrimRight(s, "\n"))
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func newCmdRunCancel(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a run at work: its running tool is killed, and it is recorded as cancelled",
		Args:  exactArgs(1, "one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			r, err := c.CancelRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: run %s %s\n", r.ID, r.Status)
			return nil
		},
	}
}

func newCmdRunFollow(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "follow RUN",
		Short: "Stream a run at work until it ends (Ctrl-C stops following, not the run)",
		Args:  exactArgs(1, "one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			p := &runPrinter{f: f, json: asJSON}
			r, err := c.FollowRun(cmd.Context(), args[0], p.event)
			if err != nil {
				return err
			}
			return runOutcome(r)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each event as a JSON line")
	return cmd
}

func newCmdRuns(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "runs [SANDBOX]",
		Short: "List the runs of paddock's own agent, newest first",
		Args:  maxArgs(1, "at most one sandbox"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			list, err := c.Runs(cmd.Context(), name)
			if err != nil {
				return err
			}
			tw, err := listing(f, asJSON, list, "no runs yet: paddock run SANDBOX \"what to do\"",
				"ID\tSANDBOX\tSTATUS\tTURNS\tTOOLS\tTOKENS\tAGE\tPROMPT")
			if tw == nil {
				return err
			}
			for _, r := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.ID, r.Sandbox, r.Status, r.Turns, r.ToolCalls,
					count(r.InputTokens+r.CacheReadTokens+r.CacheWriteTokens+r.OutputTokens), termtext.Age(time.Since(r.Created)), termtext.Escape(r.Title))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
