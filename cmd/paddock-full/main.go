// Command paddock-full is the whole of paddock: every command, the daemon (`paddock
// serve`), the TUI and, when no small guest is beside it, the guest injected into
// sandboxes. It is installed beside the lean `paddock` (cmd/paddock), which hands it
// every command line it does not serve itself; run directly, it serves them all.
package main

import (
	"os"

	"github.com/paddockhq/paddock/internal/servecmd"
)

func main() { os.Exit(servecmd.Main()) }
