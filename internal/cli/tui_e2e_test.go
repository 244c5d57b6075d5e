package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/testenv"
	"github.com/paddockhq/paddock/internal/tui/screenshot"
)

// tmuxTerm is a terminal the test types into and reads: a pane of a tmux server of its own.
type tmuxTerm struct {
	t      *testing.T
	socket string
	// env is the environment of the server, which its panes inherit.
	env []string
	// more, when set, says what else a failed wait should show (the agent's own screen).
	more func() string
}

func (tt *tmuxTerm) tmux(args ...string) string {
	tt.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-L", tt.socket, "-f", "/dev/null"}, args...)...)
	cmd.Env = tt.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		tt.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is the pane as the user sees it (with -e, its colours too).
func (tt *tmuxTerm) screen(flags ...string) string {
	return tt.tmux(append([]string{"capture-pane", "-p", "-t", "tui"}, flags...)...)
}

func (tt *tmuxTerm) keys(keys ...string) {
	tt.tmux(append([]string{"send-keys", "-t", "tui"}, keys...)...)
}
func (tt *tmuxTerm) text(s string) { tt.tmux("send-keys", "-t", "tui", "-l", s) }

// waitScreen waits until cond holds for the screen and returns it.
func (tt *tmuxTerm) waitScreen(d time.Duration, what string, cond func(string) bool) string {
	tt.t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := tt.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			extra := ""
			if tt.more != nil {
				extra = "\n" + tt.more()
			}
			tt.t.Fatalf("timed out after %v waiting for %s; the screen:\n%s%s", d, what, s, extra)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (tt *tmuxTerm) waitFor(d time.Duration, text string) string {
	tt.t.Helper()
	return tt.waitScreen(d, fmt.Sprintf("%q", text), func(s string) bool { return strings.Contains(s, text) })
}

// sessionLine is the list's line of session name (of agent claude).
func sessionLine(screen, name string) string {
	for _, l := range strings.Split(screen, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[1] == name && f[2] == "claude" {
			return l
		}
	}
	return ""
}

// saveScreen keeps the pane, colours included, in $PADDOCK_SCREENSHOTS/NAME.ansi and as
// an image in NAME.svg, when that is set (docs/screenshots is made this way).
func (tt *tmuxTerm) saveScreen(name string) {
	dir := os.Getenv("PADDOCK_SCREENSHOTS")
	if dir == "" {
		return
	}
	capture := tt.screen("-e")
	if err := os.WriteFile(filepath.Join(dir, name+".ansi"), []byte(capture), 0o644); err != nil {
		tt.t.Fatal(err)
	}
	svg := screenshot.SVG([]byte(capture), tuiCols, tuiRows)
	if err := os.WriteFile(filepath.Join(dir, name+".svg"), svg, 0o644); err != nil {
		tt.t.Fatal(err)
	}
}

// The TUI's terminal size in the end-to-end test.
const tuiCols, tuiRows = 150, 32

// TestTUIEndToEnd drives the real binary's TUI in a terminal (tmux) against a real daemon,
// a bwrap sandbox and the real Claude Code talking to a scripted model: a session started
// from the dialog goes working then idle, attach and detach come back to the list, and a
// killed agent comes back with R, its conversation resumed.
func TestTUIEndToEnd(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"claude", "bwrap", "tmux"} {
		testenv.Program(t, tool, "make setup")
	}
	model := modeltest.NewAnthropic(t)
	h, repo := e2eHome(t)
	h.Setenv("ANTHROPIC_BASE_URL", model.URL())
	h.Setenv("ANTHROPIC_API_KEY", "sk-ant-e2e-REAL-0123456789abcdefghijklmnop")
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo, "--backend", "bwrap")

	tt := &tmuxTerm{t: t, socket: fmt.Sprintf("pdk-tui-%d", os.Getpid()), env: h.Environ()}
	// The server has the home's environment: PATH with paddock (this test binary), PADDOCK_HOME.
	// tmux is only the test's terminal: the TUI runs as in a terminal of its own, without
	// TMUX (inside the user's own tmux, an attach opens a window of it instead).
	tt.tmux("new-session", "-d", "-s", "tui", "-x", fmt.Sprint(tuiCols), "-y", fmt.Sprint(tuiRows), "-c", repo, "env -u TMUX paddock")
	t.Cleanup(func() { exec.Command("tmux", "-L", tt.socket, "kill-server").Run() })
	tt.more = func() string {
		agent, errOut, _ := paddock("", "exec", "repo", "--", "sh", "-c", "cat /run/paddock/sessions/main.json; echo; tmux -S /run/paddock/tmux.sock capture-pane -p -t =main:")
		return fmt.Sprintf("requests to the model: %d; the session's status file and its agent's screen:\n%s%s", len(model.Requests()), agent, errOut)
	}
	tt.waitFor(10*time.Second, "1 sandbox · 0 sessions")

	// The dialog: the existing sandbox, Claude Code, the name suggested from the branch.
	tt.keys("n")
	tt.waitFor(10*time.Second, "will create sandbox")
	tt.keys("Down", "Right")
	tt.waitFor(20*time.Second, "will start claude in repo/main")
	tt.saveScreen("tui-claude-dialog")
	tt.keys("C-s")
	tt.waitFor(90*time.Second, "started repo/main")

	// A message without attaching; the list shows the turn: working, then idle.
	// m goes to the selected session: wait for the list to have selected it.
	tt.waitFor(30*time.Second, "│repo/main ")
	tt.keys("m")
	tt.waitFor(20*time.Second, "message to repo/main:")
	tt.text("RUN: sleep 4 && echo hi > /workspace/hi.txt")
	tt.keys("Enter")
	tt.waitScreen(60*time.Second, "main working", func(s string) bool { return strings.Contains(sessionLine(s, "main"), "working") })
	tt.saveScreen("tui-claude-list")
	tt.waitScreen(60*time.Second, "main idle or waiting", func(s string) bool {
		l := sessionLine(s, "main")
		return strings.Contains(l, "idle") || strings.Contains(l, "waiting")
	})
	tt.waitFor(20*time.Second, "DONE:")

	// Enter attaches to Claude Code's own screen; Ctrl-b d comes back to the list.
	tt.keys("Enter")
	tt.waitScreen(30*time.Second, "Claude's screen", func(s string) bool {
		return !strings.Contains(s, "enter attach") && strings.Contains(s, "❯")
	})
	tt.keys("C-b", "d")
	tt.waitFor(10*time.Second, "detached from repo/main")

	// Kill the agent: the list shows it exited; R brings it back on its conversation.
	must("", "exec", "repo", "--", "sh", "-c", "pkill -KILL -f '^[c]laude --dangerously-skip-permissions' || true")
	tt.waitScreen(30*time.Second, "main exited", func(s string) bool { return strings.Contains(sessionLine(s, "main"), "exited") })
	tt.keys("R")
	tt.waitFor(90*time.Second, "repo/main resumed")
	before := len(model.Requests())
	// m goes to the selected session: wait for the list to have selected it.
	tt.waitFor(30*time.Second, "│repo/main ")
	tt.keys("m")
	tt.waitFor(20*time.Second, "message to repo/main:")
	tt.text("after the restart")
	tt.keys("Enter")
	deadline := time.Now().Add(60 * time.Second)
	for {
		resumed := false
		for _, r := range model.Requests()[before:] {
			if r.Contains("after the restart") && r.Contains("hi.txt") {
				resumed = true
			}
		}
		if resumed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request to the model carried the earlier conversation after R; the screen:\n%s", tt.screen())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// d on the sandbox's line deletes it after a final snapshot, as paddock rm does:
	// restore brings back the work the agent left uncommitted.
	tt.keys("Up", "d")
	tt.waitFor(10*time.Second, "Delete sandbox repo? A final snapshot is taken first")
	tt.keys("y")
	tt.waitFor(90*time.Second, "deleted repo; `paddock restore ")
	tt.keys("q")
	must("", "restore", "repo")
	if got := must("", "exec", "repo", "--", "cat", "/workspace/hi.txt"); got != "hi\n" {
		t.Errorf("after the TUI's delete and a restore, hi.txt holds %q, want \"hi\\n\"", got)
	}
}
