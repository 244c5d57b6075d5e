// Command paddock runs AI coding agents inside isolated sandboxes. This program is the
// lean front of the CLI (package front): it serves `--version`, `exec`, `shell` and
// `sync` itself, so they start in a few milliseconds, and hands every other command
// line to paddock-full, installed beside it, which is the rest of paddock.
package main

import (
	"os"

	"github.com/paddockhq/paddock/internal/front"
)

func main() { os.Exit(front.Main()) }
