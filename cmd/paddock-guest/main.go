// paddock-guest is the guest alone: the small static program the daemon copies into
// every sandbox (as /opt/paddock/bin/paddock) when it finds it beside its own binary. It
// answers the same command lines inside a sandbox as the whole paddock does (`paddock
// agent serve`, `paddock guest notify`...), and holds none of the daemon's or the CLI's
// dependencies (no Docker client, SQLite, S3 or model client).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/guestcmd"
)

// version is set by the build (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{Use: "paddock", Short: "paddock's guest, inside a sandbox", Version: version,
		SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(guestcmd.New(guestcmd.IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, version))
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "paddock: %v\n", err)
		os.Exit(1)
	}
}
