package cli

import (
	"path/filepath"

	"github.com/spf13/cobra"
)

// What the commands of Factory.More (package servecmd) share with the client's: their
// usage errors, JSON output and the local-only directory they keep files in.

// ExactArgs is cobra.ExactArgs with an error the exit-code mapping knows as usage (exit 2).
func ExactArgs(n int, what string) cobra.PositionalArgs { return exactArgs(n, what) }

// Usagef is a command line that cobra accepted but the command did not (exit 2).
func Usagef(format string, args ...any) error { return usagef(format, args...) }

// WriteJSON prints v as indented JSON on the command's standard output (--json).
func (f *Factory) WriteJSON(v any) error { return writeJSON(f, v) }

// HostsDir is where this machine's ssh hosts are kept: beside the config file, read by
// this machine's daemon. A remote context's daemon keeps its own, so with a remote
// context it refuses, saying to run `paddock host` on that server.
func (f *Factory) HostsDir() (string, error) {
	p, cf, err := f.contexts()
	if err != nil {
		return "", err
	}
	if name := f.contextName(cf); name != LocalContext {
		return "", usagef("hosts are kept by the daemon that reaches them: this machine's (--context local), not context %s's (run `paddock host` on that server)", name)
	}
	return filepath.Dir(p.Config), nil
}
