package cli_test

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/paddockhq/paddock/internal/cli"
)

// TestAskWhichSession: on a terminal, a command that needs a session of a sandbox with
// several asks which one (a number, a name, or the first by default); with
// --non-interactive it fails at once with the command that names one, exit 2.
func TestAskWhichSession(t *testing.T) {
	run, _ := upRepo(t)
	run("chat", "repo", "--new", "alpha", "--agent", "shell", "--command", "sleep 100000")
	run("chat", "repo", "--new", "beta", "--agent", "shell", "--command", "sleep 100000")

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	var out strings.Builder
	f := cli.NewFactory(cli.IOStreams{In: tty, Out: &out, ErrOut: tty})
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
	f = cli.NewFactory(cli.IOStreams{In: tty, Out: &out, ErrOut: &errOut})
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
