package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/front"
)

type execOptions struct {
	name string
	argv []string
	tty  bool
	env  []string
	dir  string
	// shell is `paddock shell`: its own failures exit by kind, not 125.
	shell bool
}

func newCmdExec(f *Factory) *cobra.Command {
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
			return runExec(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().BoolVarP(&opts.tty, "tty", "t", false, "give the command a terminal (interactive programs)")
	cmd.Flags().StringArrayVarP(&opts.env, "env", "e", nil, "set an environment variable, KEY=VALUE")
	cmd.Flags().StringVarP(&opts.dir, "workdir", "w", "", "working directory (default /workspace)")
	return cmd
}

func newCmdShell(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "shell NAME",
		Short: "Open an interactive shell in a sandbox (exec -t NAME -- bash)",
		Args:  exactArgs(1, "one sandbox name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := &execOptions{name: args[0], argv: []string{"bash", "-l"}, tty: true, shell: true}
			return runExec(cmd.Context(), f, opts)
		},
	}
}

func runExec(ctx context.Context, f *Factory, opts *execOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		if opts.shell {
			return err
		}
		return withExecCode(err)
	}
	e := front.Exec{Name: opts.name, Argv: opts.argv, Env: opts.env, Dir: opts.dir, TTY: opts.tty, Shell: opts.shell}
	code, err := front.RunExec(ctx, c.Client, front.Streams{In: f.IO.In, Out: f.IO.Out, ErrOut: f.IO.ErrOut}, e)
	// The process's code, or exec's own failure said and mapped as the lean front does.
	exit := front.ExecExit
	if opts.shell {
		exit = front.ShellExit
	}
	if code := exit(f.IO.ErrOut, code, err); code != 0 {
		return &exitError{code}
	}
	return nil
}

// withExecCode reports an error of exec itself, exiting 125 after the usual message.
func withExecCode(err error) error { return &execError{err} }

type execError struct{ err error }

func (e *execError) Error() string { return e.err.Error() }
func (e *execError) Unwrap() error { return e.err }
