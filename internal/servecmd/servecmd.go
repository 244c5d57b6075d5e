// Package servecmd holds the commands that run server code in the paddock process
// itself rather than asking a daemon: `serve` (the daemon), `verify` (backends and a
// private daemon, in process), `host` and `backend serve` (the ssh backend's two ends)
// and `guest` (the guest, when paddock-full is the one injected into a sandbox). The
// client's commands (package cli) know only the API's client and wire; the full program
// (cmd/paddock-full) is both, assembled by Main.
package servecmd

import (
	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/guestcmd"
)

// Main runs the full program, every command, with the process's arguments and returns
// the exit code.
func Main() int { return cli.Main(Commands) }

// Commands are this package's commands, for cli.Factory.More.
func Commands(f *cli.Factory) []*cobra.Command {
	return []*cobra.Command{newCmdServe(f), newCmdVerify(f), newCmdHost(f), newCmdBackend(f), newCmdGuest(f)}
}

// newCmdGuest is `paddock guest` (alias `agent`): the guest's own command line
// (guestcmd), which parses its flags itself, as the small guest does.
func newCmdGuest(f *cli.Factory) *cobra.Command {
	return &cobra.Command{
		Use:                "guest COMMAND",
		Aliases:            []string{"agent"},
		Short:              guestcmd.Short,
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return guestcmd.Run(cmd.Context(), guestcmd.IO{In: f.IO.In, Out: f.IO.Out, ErrOut: f.IO.ErrOut}, cli.Version, args)
		},
	}
}
