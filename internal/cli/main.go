// Package cli holds paddock's client commands. Each verb is one file with an options
// struct and a run function; commands talk to the daemon through the API's client and
// print to the command's streams. The commands that run server code in the process
// (serve, verify, host, backend serve, guest) are package servecmd's, added to the root
// through Factory.More; internal/deps' test keeps this package off the server's.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/front"
)

// Version is paddock's version (front.Version, set at build time).
var Version = front.Version

// IOStreams are a command's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// exitError carries an exit code chosen by a command (exec passes the remote one through).
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Main runs the CLI with the process's arguments and streams and returns the exit code.
// more gives the commands beyond the client's (Factory.More): the full program passes
// those that run the daemon's, a backend's or the guest's code in its own process.
func Main(more func(*Factory) []*cobra.Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := NewFactory(IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	f.More = more
	if filepath.Base(os.Args[0]) == RemoteHelperName {
		return runRemoteHelper(ctx, f, os.Args[1:])
	}
	return Run(ctx, f, os.Args[1:])
}

// Run runs one command line and maps its error to an exit code and a message: the one
// place where errors meet the user.
func Run(ctx context.Context, f *Factory, args []string) int {
	root := NewRootCmd(f)
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	front.Report(f.IO.ErrOut, err)
	var xe *execError
	if errors.As(err, &xe) {
		return front.ExecFailed
	}
	return ExitCode(err)
}

// Exit codes: 0 success, 1 failure, 2 bad usage or input, 3 not found, 4 conflict with
// the current state, 5 unavailable here, 6 a security check failed (verify). `exec` passes the process's own code through
// and uses 125 for its own failures, as docker exec does.
func ExitCode(err error) int {
	var usage *usageError
	if errors.As(err, &usage) || strings.HasPrefix(err.Error(), "unknown command ") {
		return 2 // cobra's own "unknown command" has no type of its own
	}
	return front.CodeOf(err)
}

// usageError is a command line that cobra accepted but the command did not.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:           "paddock",
		Short:         "Run AI coding agents with every permission, inside isolated sandboxes",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	root.PersistentFlags().BoolVar(&f.NonInteractive, "non-interactive", false, "never ask: when something is missing, fail (exit 2) with the command that gives it")
	root.PersistentFlags().StringVar(&f.Context, "context", "", "the daemon to talk to: the context `NAME` ('paddock context ls' lists them; default PADDOCK_CONTEXT, else the one 'paddock context use' chose, else local)")
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		f.command = strings.TrimPrefix(cmd.CommandPath(), "paddock ")
	}
	// With no arguments: the TUI in a terminal, the help elsewhere.
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if isTerminal(f.IO.In) && isTerminal(f.IO.Out) {
			return runTUI(cmd.Context(), f)
		}
		return cmd.Help()
	}
	root.AddCommand(
		newCmdUp(f),
		newCmdLs(f),
		newCmdAlarms(f),
		newCmdExec(f),
		newCmdShell(f),
		newCmdCp(f),
		newCmdStart(f),
		newCmdStop(f),
		newCmdRm(f),
		newCmdDoctor(f),
		newCmdNet(f),
		newCmdChat(f),
		newCmdAttach(f),
		newCmdEvents(f),
		newCmdRestart(f),
		newCmdRewind(f),
		newCmdCheckpoints(f),
		newCmdCheckpoint(f),
		newCmdTranscript(f),
		newCmdSync(f),
		newCmdMerge(f),
		newCmdSnapshot(f),
		newCmdSnapshots(f),
		newCmdRestore(f),
		newCmdRun(f),
		newCmdRuns(f),
		newCmdTask(f),
		newCmdDiff(f),
		newCmdFork(f),
		newCmdBisect(f),
		newCmdPush(f),
		newCmdWorktree(f),
		newCmdEnv(f),
		newCmdImage(f),
		newCmdWeb(f),
		newCmdTUI(f),
		newCmdToken(f),
		newCmdLogin(f),
		newCmdAudit(f),
		newCmdContext(f),
		newCmdConfig(f),
		newCmdKey(f),
		newCmdUsage(f),
		newCmdBudget(f),
		newCmdSSH(f),
		newCmdSSHConfig(f),
		newCmdSSHProxy(f),
		newCmdNotify(f),
		newCmdPorts(f),
		newCmdOpen(f),
		newCmdDaemon(f),
	)
	if f.More != nil {
		root.AddCommand(f.More(f)...)
	}
	settleGroups(root)
	return root
}

// exactArgs is cobra.ExactArgs with an error the exit-code mapping knows as usage.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s (see `paddock %s --help`)", cmd.Name(), what, cmd.Name())
		}
		return nil
	}
}

// minArgs is cobra.MinimumNArgs with an error the exit-code mapping knows as usage.
func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s takes %s (see `paddock %s --help`)", cmd.Name(), what, cmd.Name())
		}
		return nil
	}
}

// maxArgs is cobra.MaximumNArgs with an error the exit-code mapping knows as usage.
func maxArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return usagef("%s takes %s (see `paddock %s --help`)", cmd.Name(), what, cmd.Name())
		}
		return nil
	}
}
