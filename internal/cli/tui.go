package cli

import (
	"context"
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/tui"
)

func newCmdTUI(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "tui",
		Short: "Every sandbox and session at a glance, live; attach, restart, sync, diff, start new ones",
		Long: `The terminal UI: sandboxes and their sessions grouped by project, with each session's status
(working, waiting for you, idle, exited), its last activity and a preview of its conversation,
kept current from the daemon's events. Enter attaches (Ctrl-b d comes back), n starts a new
session, R restarts one, ? lists every key. ` + "`paddock`" + ` with no arguments in a terminal opens it too.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error { return runTUI(cmd.Context(), f) },
	}
}

// runTUI opens the TUI on the command's terminal.
func runTUI(ctx context.Context, f *Factory) error {
	if !isTerminal(f.IO.In) || !isTerminal(f.IO.Out) {
		return usagef("the TUI needs a terminal: run `paddock tui` in one, or see `paddock --help`")
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	exe, err := f.Executable()
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	return tui.Run(ctx, tui.Options{
		Daemon: c,
		Command: func(ctx context.Context, args ...string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, exe, args...)
			cmd.Args[0] = "paddock"
			return cmd
		},
		Cwd: cwd,
	}, f.IO.In, f.IO.Out)
}
