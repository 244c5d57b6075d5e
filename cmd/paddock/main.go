// Command paddock runs AI coding agents inside isolated sandboxes. One binary is the CLI,
// the daemon (`paddock serve`) and the guest injected into every sandbox
// (`paddock guest serve`).
package main

import (
	"os"

	"github.com/paddockhq/paddock/internal/cli"
)

func main() { os.Exit(cli.Main()) }
