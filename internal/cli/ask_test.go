package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/modeltest"
)

// TestAskWhichSession: on a terminal, a command that needs a session of a sandbox with
// several asks which one (a number, a name, or the first by default); with
// --non-interactive it fails at once with the command that names one, exit 2.
func TestAskWhichSession(t *testing.T) {
	t.Parallel()
	run, h := upRepo(t)
	run("chat", "repo", "--new", "alpha", "--agent", "shell", "--command", "sleep 100000")
	run("chat", "repo", "--new", "beta", "--agent", "shell", "--command", "sleep 100000")

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	var out strings.Builder
	f := h.Factory(cli.IOStreams{In: tty, Out: &out, ErrOut: tty})
	done := make(chan int, 1)
	go func() { done <- cli.Run(context.Background(), f, []string{"chat", "repo", "--rm"}) }()
	// The question, then the answer: the second.
	screen := readUntil(t, ptmx, "choose [1]: ")
	for _, want := range []string{"sandbox repo has several sessions: which one?", "1) repo/alpha", "2) repo/beta"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the question lacks %q:\n%s", want, screen)
		}
	}
	io.WriteString(ptmx, "2\n")
	go io.Copy(io.Discard, ptmx)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("chat --rm after choosing: exit %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("chat --rm did not end after the choice")
	}
	if list := run("chat", "repo", "--list"); !strings.Contains(list, "alpha") || strings.Contains(list, "beta") {
		t.Fatalf("after choosing beta to remove:\n%s", list)
	}

	run("chat", "repo", "--new", "gamma", "--agent", "shell", "--command", "sleep 100000")
	var errOut strings.Builder
	f = h.Factory(cli.IOStreams{In: tty, Out: &out, ErrOut: &errOut})
	code := cli.Run(context.Background(), f, []string{"--non-interactive", "transcript", "repo"})
	if code != 2 || !strings.Contains(errOut.String(), "name one, e.g. `paddock transcript repo/alpha`") {
		t.Fatalf("--non-interactive: exit %d\n%s", code, errOut.String())
	}
}

// readUntil reads a terminal until it has shown want, and returns what it showed.
func readUntil(t *testing.T, r *os.File, want string) string {
	t.Helper()
	var got strings.Builder
	buf := make([]byte, 4096)
	deadline := time.Now().Add(20 * time.Second)
	r.SetReadDeadline(deadline)
	defer r.SetReadDeadline(time.Time{})
	for !strings.Contains(got.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q:\n%s", want, got.String())
		}
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("read the terminal: %v\n%s", err, got.String())
		}
	}
	return got.String()
}

// TestAskForKey: on a terminal, `up --agent claude` with no Anthropic key on the daemon
// asks for one, not echoed, before making anything; the daemon keeps it, and the real
// Claude Code's requests reach the provider with it while the sandbox holds a placeholder.
func TestAskForKey(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "claude")
	model := modeltest.NewAnthropic(t)
	h, repo := e2eHome(t)
	h.Setenv("ANTHROPIC_BASE_URL", model.URL())
	h.Setenv("ANTHROPIC_API_KEY", "")
	run := h.Must
	var doctor struct {
		Backends []struct {
			Name      string
			Available bool
		}
	}
	if err := json.Unmarshal([]byte(run("doctor", "--json")), &doctor); err != nil {
		t.Fatal(err)
	}
	available := 0
	for _, b := range doctor.Backends {
		if b.Available {
			available++
		}
	}

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	var out strings.Builder
	f := h.Factory(cli.IOStreams{In: tty, Out: &out, ErrOut: tty})
	done := make(chan int, 1)
	go func() { done <- cli.Run(context.Background(), f, []string{"up", repo, "--agent", "claude"}) }()
	// With several backends and none configured, which one is the default is asked
	// first, once: Enter takes the first (bwrap), and the config keeps it.
	if available > 1 {
		screen := readUntil(t, ptmx, "choose [1]: ")
		if !strings.Contains(screen, "no default backend is set, and several run here: which one should `paddock up` use?") ||
			!strings.Contains(screen, "1) bwrap") {
			t.Fatalf("the backend question:\n%s", screen)
		}
		io.WriteString(ptmx, "\n")
	}
	screen := readUntil(t, ptmx, "empty to stop): ")
	if !strings.Contains(screen, "agent claude calls anthropic, and the daemon has no key for it.") {
		t.Fatalf("the question:\n%s", screen)
	}
	const key = "sk-ant-typed-0123456789abcdefghij"
	io.WriteString(ptmx, key+"\n")
	shown := make(chan string, 1)
	go func() {
		var rest strings.Builder
		io.Copy(&rest, ptmx)
		shown <- rest.String()
	}()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("up after giving the key: exit %d", code)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("up did not end after the key was given")
	}
	tty.Close()
	if rest := <-shown; strings.Contains(screen+rest, "typed-0123") {
		t.Fatalf("the key was echoed:\n%s%s", screen, rest)
	}

	if available > 1 {
		if cfg, _ := os.ReadFile(filepath.Join(h.Dir, "config.toml")); !strings.Contains(string(cfg), `default_backend = "bwrap"`) {
			t.Fatalf("the chosen backend is not in the config:\n%s", cfg)
		}
	}
	pane := func() string {
		return run("exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", "claude")
	}
	waitUntil(t, 60*time.Second, "Claude's prompt", func() bool { return strings.Contains(pane(), "❯") })
	run("chat", "repo/claude", "-m", "hello with the typed key")
	waitUntil(t, 60*time.Second, "the model request", func() bool {
		for _, r := range model.Requests() {
			if r.Contains("hello with the typed key") {
				if r.APIKey != key {
					t.Fatalf("the provider got key %q, not the one typed", r.APIKey)
				}
				return true
			}
		}
		return false
	})
	nothingInside(t, func(stdin string, args ...string) string { return run(args...) }, "typed-012[3]", "the typed key")
}
