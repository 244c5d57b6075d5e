package main

import (
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/guestcmd"
)

// TestRun: the guest answers `guest ...`, `agent ...` and --version, and refuses anything
// else with a usage error.
func TestRun(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--version"}, 0, "paddock version dev\n"},
		{[]string{"agent", "--help"}, 0, "Commands:"},
		{[]string{"guest", "nope"}, 1, ""},
		{nil, 2, ""},
		{[]string{"exec", "x"}, 2, ""},
	} {
		var out, errOut strings.Builder
		code := run(t.Context(), tt.args, guestcmd.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		if code != tt.code || !strings.Contains(out.String(), tt.out) {
			t.Errorf("run(%q) = %d, %q (stderr %q); want %d, %q", tt.args, code, out.String(), errOut.String(), tt.code, tt.out)
		}
		if code != 0 && errOut.Len() == 0 {
			t.Errorf("run(%q) failed without a word on stderr", tt.args)
		}
	}
}
