package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestDetachKeys: inside the user's own tmux (a real one, here) whose prefix is
// Ctrl-b, as the sandbox's is, attach says to press it twice; with another prefix, or
// outside tmux, Ctrl-b d.
func TestDetachKeys(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "tmux", "apt-get install tmux")
	socket := filepath.Join(t.TempDir(), "outer.sock")
	if out, err := exec.Command("tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d", "-s", "mine", "-n", "theirs", "sleep 60").CombinedOutput(); err != nil {
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

// TestDetachKeysNested: the keys attach says inside the user's tmux detach the client
// of the sandbox's tmux nested in it and leave the user's own attached (real tmux
// servers, the user's client in a terminal of its own).
func TestDetachKeysNested(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "tmux", "apt-get install tmux")
	testenv.Program(t, "script", "apt-get install util-linux")
	dir := t.TempDir()
	sock := func(name string) string { return filepath.Join(dir, name) }
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	for _, s := range []string{"sandbox", "user", "terminal"} {
		t.Cleanup(func() { exec.Command("tmux", "-S", sock(s), "kill-server").Run() })
	}
	// The sandbox's tmux; the user's, whose pane runs the nested client as attach does;
	// and a terminal in which the user's client runs.
	tmux("-S", sock("sandbox"), "new-session", "-d", "-s", "agent", "sleep 60")
	tmux("-S", sock("user"), "new-session", "-d", "-s", "mine", "env -u TMUX tmux -S "+sock("sandbox")+" attach -t agent; sleep 60")
	tmux("-S", sock("terminal"), "new-session", "-d", "-s", "t", "env -u TMUX script -qfc 'tmux -S "+sock("user")+" attach -t mine' /dev/null; sleep 60")
	clients := func(s string) int {
		out, _ := exec.Command("tmux", "-S", sock(s), "list-clients").Output()
		return strings.Count(string(out), "\n")
	}
	waitFor := func(what string, ok func() bool) {
		for i := 0; i < 100 && !ok(); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if !ok() {
			t.Fatalf("%s: the sandbox's tmux has %d clients, the user's %d", what, clients("sandbox"), clients("user"))
		}
	}
	waitFor("both attached", func() bool { return clients("sandbox") == 1 && clients("user") == 1 })
	keys := detachKeys(sock("user")+",1,0", outerPrefix)
	if !strings.Contains(keys, "Ctrl-b Ctrl-b d") {
		t.Fatalf("attach says %q", keys)
	}
	tmux("-S", sock("terminal"), "send-keys", "-t", "t", "C-b", "C-b", "d")
	waitFor("after Ctrl-b Ctrl-b d", func() bool { return clients("sandbox") == 0 && clients("user") == 1 })
}

// TestAttachInsideTmuxOpensAWindow: attached from a terminal inside the user's own tmux
// (a real one) whose prefix is Ctrl-b, a session opens in a new window of that tmux,
// named after it, running paddock's attach to it against the same daemon; the pane the
// user typed in stays theirs, and the message says how to come back and to detach.
func TestAttachInsideTmuxOpensAWindow(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "tmux", "apt-get install tmux")
	dir := t.TempDir()
	socket := filepath.Join(dir, "user.sock")
	if out, err := exec.Command("tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d", "-s", "mine", "-n", "theirs", "sleep 60").CombinedOutput(); err != nil {
		t.Fatalf("start a tmux server: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", socket, "kill-server").Run() })
	// paddock's own program, as the window runs it: it writes down how it was run.
	record := filepath.Join(dir, "ran")
	self := filepath.Join(dir, "paddock it's")
	script := "#!/bin/sh\nprintf '%s|' \"$@\" \"$PADDOCK_HOME\" \"$" + inWindowEnv + "\" > '" + record + "'\nsleep 60\n"
	if err := os.WriteFile(self, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	var errOut strings.Builder
	f := NewFactory(IOStreams{In: tty, Out: tty, ErrOut: &errOut})
	f.Executable = func() (string, error) { return self, nil }
	// A terminal inside the user's tmux, not in a window paddock opened.
	f.Getenv = func(k string) string {
		if k == "TMUX" {
			return socket + ",1,0"
		}
		if k == inWindowEnv {
			return ""
		}
		return os.Getenv(k)
	}
	home := filepath.Join(dir, "home")
	f.Paths = func() (config.Paths, error) { return config.Paths{Home: home}, nil }

	if err := attachSession(context.Background(), f, "repo", "claude"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "repo/claude is open in a new window of your tmux") || !strings.Contains(errOut.String(), "Ctrl-b l") {
		t.Errorf("attach said %q", errOut.String())
	}
	out, err := exec.Command("tmux", "-S", socket, "list-windows", "-t", "mine", "-F", "#{window_name}").Output()
	if err != nil || !strings.Contains(string(out), "repo/claude") || !strings.Contains(string(out), "theirs") {
		t.Fatalf("the user's tmux has windows %q (%v): want theirs and repo/claude", out, err)
	}
	var ran []byte
	for i := 0; i < 100; i++ {
		if ran, err = os.ReadFile(record); err == nil && len(ran) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if want := "chat|repo/claude|" + home + "|1|"; string(ran) != want {
		t.Fatalf("the window ran paddock with %q, want %q", ran, want)
	}
}
