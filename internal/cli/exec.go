package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/paddockhq/paddock/internal/api"
)

type execOptions struct {
	name string
	argv []string
	tty  bool
	env  []string
	dir  string
}

// execFailed is exec's exit code for its own failures, distinct from the process's.
const execFailed = 125

func newCmdExec(f *Factory, runF func(context.Context, *execOptions) error) *cobra.Command {
	opts := &execOptions{}
	cmd := &cobra.Command{
		Use:   "exec [-t] NAME -- COMMAND [ARG...]",
		Short: "Run a command in a sandbox's /workspace; its output and exit code pass through",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("exec takes a sandbox name and a command: paddock exec NAME -- COMMAND [ARG...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.name, opts.argv = args[0], args[1:]
			if len(opts.argv) > 0 && opts.argv[0] == "--" {
				opts.argv = opts.argv[1:]
			}
			if len(opts.argv) == 0 {
				return usagef("exec takes a command after the sandbox name: paddock exec NAME -- COMMAND [ARG...]")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runExec(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().BoolVarP(&opts.tty, "tty", "t", false, "give the command a terminal (interactive programs)")
	cmd.Flags().StringArrayVarP(&opts.env, "env", "e", nil, "set an environment variable, KEY=VALUE")
	cmd.Flags().StringVarP(&opts.dir, "workdir", "w", "", "working directory (default /workspace)")
	return cmd
}

func newCmdShell(f *Factory, runF func(context.Context, *execOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "shell NAME",
		Short: "Open an interactive shell in a sandbox (exec -t NAME -- bash)",
		Args:  exactArgs(1, "one sandbox name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := &execOptions{name: args[0], argv: []string{"bash", "-l"}, tty: true}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runExec(cmd.Context(), f, opts)
		},
	}
}

func runExec(ctx context.Context, f *Factory, opts *execOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return withExecCode(err)
	}
	req := api.ExecRequest{Argv: opts.argv, Env: opts.env, Dir: opts.dir, TTY: opts.tty}
	eio := api.ExecIO{Stdin: f.IO.In, Stdout: f.IO.Out, Stderr: f.IO.ErrOut}
	if !opts.tty {
		if fi, ok := f.IO.In.(*os.File); ok && term.IsTerminal(int(fi.Fd())) {
			eio.Stdin = nil // an interactive terminal is not input for a batch command
		}
	}
	if opts.tty {
		in, isFile := f.IO.In.(*os.File)
		if isFile && term.IsTerminal(int(in.Fd())) {
			fd := int(in.Fd())
			if cols, rows, err := term.GetSize(fd); err == nil {
				req.Rows, req.Cols = uint16(rows), uint16(cols)
			}
			if tv := os.Getenv("TERM"); tv != "" {
				req.Env = append([]string{"TERM=" + tv}, req.Env...)
			}
			old, err := term.MakeRaw(fd)
			if err != nil {
				return withExecCode(fmt.Errorf("put the terminal in raw mode: %w", err))
			}
			defer term.Restore(fd, old)
			resize := make(chan [2]uint16, 1)
			winch := make(chan os.Signal, 1)
			signal.Notify(winch, syscall.SIGWINCH)
			defer signal.Stop(winch)
			go func() {
				for range winch {
					if cols, rows, err := term.GetSize(fd); err == nil {
						select {
						case resize <- [2]uint16{uint16(rows), uint16(cols)}:
						default:
						}
					}
				}
			}()
			eio.Resize = resize
		} else {
			req.Env = append([]string{"TERM=xterm-256color"}, req.Env...)
			if req.Rows == 0 {
				req.Rows, req.Cols = 24, 80
			}
		}
	}
	code, err := c.Exec(ctx, opts.name, req, eio)
	if err != nil {
		if code == 127 {
			fmt.Fprintf(f.IO.ErrOut, "paddock: %v\n", err)
			return &exitError{127}
		}
		return withExecCode(err)
	}
	if code != 0 {
		return &exitError{code}
	}
	return nil
}

// withExecCode reports an error of exec itself, exiting 125 after the usual message.
func withExecCode(err error) error { return &execError{err} }

type execError struct{ err error }

func (e *execError) Error() string { return e.err.Error() }
func (e *execError) Unwrap() error { return e.err }
