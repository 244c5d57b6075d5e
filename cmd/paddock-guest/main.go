// paddock-guest is the guest alone: the small static program the daemon copies into
// every sandbox (as /opt/paddock/bin/paddock) when it finds it beside its own binary. It
// answers the same command lines inside a sandbox as the whole paddock does (`paddock
// agent serve`, `paddock guest notify`...), and holds none of the daemon's or the CLI's
// dependencies (no Docker client, SQLite, S3 or model client, no cobra).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/paddockhq/paddock/internal/guestcmd"
)

// version is set by the build (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], guestcmd.IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}

// run answers a command line and returns the exit status.
func run(ctx context.Context, args []string, s guestcmd.IO) int {
	switch {
	case len(args) > 0 && (args[0] == "guest" || args[0] == "agent"):
		if err := guestcmd.Run(ctx, s, version, args[1:]); err != nil {
			fmt.Fprintf(s.ErrOut, "paddock: %v\n", err)
			return 1
		}
		return 0
	case len(args) == 1 && (args[0] == "--version" || args[0] == "version"):
		fmt.Fprintf(s.Out, "paddock version %s\n", version)
		return 0
	}
	usage(s.ErrOut)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "This is paddock's guest, which runs inside a sandbox: it answers `paddock guest COMMAND`\n"+
		"(see `paddock guest --help`) and `paddock --version` only.\n")
}
