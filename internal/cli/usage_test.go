package cli_test

import (
	"os"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/clitest"
)

// TestUsageErrors: every command line that is wrong as typed exits 2, with a message,
// before anything is asked of a daemon (none runs here, and none may be started).
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	h := clitest.New(t)
	for _, line := range [][]string{
		{"nosuchcommand"},
		{"ls", "extra"},
		{"ls", "--nosuchflag"},
		{"up"},
		{"up", "a", "b"},
		{"up", ".", "--cpus", "0"},
		{"up", ".", "--memory", "lots"},
		{"exec"},
		{"exec", "repo"},
		{"cp", "a"},
		{"cp", "a", "b", "c"},
		{"stop"},
		{"start"},
		{"rm"},
		{"push"},
		{"sync", "a", "b"},
		{"attach", "a", "b"},
		{"diff", "a", "b"},
		{"chat", "a", "b", "c"},
		{"chat", "repo/s", "--rm", "--list"},
		{"restart"},
		{"transcript"},
		{"events", "--since", "yesterday"},
		{"events", "--until", "12"},
		{"token", "create"},
		{"token", "revoke"},
		{"token", "ls", "x"},
		{"notify", "rm"},
		{"notify", "test", "x"},
		{"ports", "a", "b"},
		{"open"},
		{"open", "repo"},
		{"open", "repo:http"},
		{"open", "repo:70000"},
		{"open", "repo:80", "--path", "relative"},
		{"web", "extra"},
		{"net", "allow"},
		{"tui", "extra"},
	} {
		t.Run(strings.Join(line, " "), func(t *testing.T) {
			out, errOut, code := h.Run("", line...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage)\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			if strings.TrimSpace(errOut) == "" && !strings.Contains(out, "Usage") {
				t.Errorf("no message")
			}
		})
	}
	if _, err := os.Stat(h.Dir + "/paddock.sock"); err == nil {
		t.Error("a usage error started a daemon")
	}
}
