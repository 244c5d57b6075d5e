package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/testenv"
)

// TestDetachKeys: inside the user's own tmux (a real one, here) whose prefix is
// Ctrl-b, as the sandbox's is, attach says to press it twice; with another prefix, or
// outside tmux, Ctrl-b d.
func TestDetachKeys(t *testing.T) {
	testenv.Program(t, "tmux", "apt-get install tmux")
	socket := filepath.Join(t.TempDir(), "outer.sock")
	if out, err := exec.Command("tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d", "-s", "mine", "sleep 60").CombinedOutput(); err != nil {
		t.Fatalf("start a tmux server: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", socket, "kill-server").Run() })
	tmuxEnv := socket + ",12345,0"

	if got := detachKeys("", outerPrefix); got != "Ctrl-b d" {
		t.Errorf("outside tmux: %q, want Ctrl-b d", got)
	}
	if got := detachKeys(tmuxEnv, outerPrefix); !strings.HasPrefix(got, "inside your tmux, Ctrl-b Ctrl-b d") {
		t.Errorf("inside a tmux whose prefix is Ctrl-b: %q, want Ctrl-b Ctrl-b d", got)
	}
	if out, err := exec.Command("tmux", "-S", socket, "set-option", "-g", "prefix", "C-a").CombinedOutput(); err != nil {
		t.Fatalf("set the prefix: %v\n%s", err, out)
	}
	if got := detachKeys(tmuxEnv, outerPrefix); got != "Ctrl-b d" {
		t.Errorf("inside a tmux whose prefix is Ctrl-a: %q, want Ctrl-b d", got)
	}
}
