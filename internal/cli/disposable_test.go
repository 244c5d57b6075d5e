package cli_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/testenv"
)

// A "Just do it" session's agent is told its sandbox is disposable, in its memory file
// beside paddock's context and what was there; an agent with no memory file is refused
// before anything starts.
func TestDisposableNote(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "gemini")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	h, repo := e2eHome(t)
	h.Setenv("GEMINI_API_KEY", "disposable-test-key") // a session of an agent needs its provider's key
	must := h.Must
	must("up", repo)
	must("exec", "repo", "--", "sh", "-c", "mkdir -p /home/agent/.gemini && echo 'my own rules' > /home/agent/.gemini/GEMINI.md")
	ctx := context.Background()
	c, err := h.Factory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}).Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSession(ctx, "repo", session.CreateRequest{Name: "yolo", Agent: "gemini", Disposable: true}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	memory := must("exec", "repo", "--", "cat", "/home/agent/.gemini/GEMINI.md")
	for _, want := range []string{"my own rules", "<!-- paddock -->", "paddock sandbox", "<!-- paddock-disposable -->", "This machine is disposable"} {
		if !strings.Contains(memory, want) {
			t.Errorf("GEMINI.md lacks %q:\n%s", want, memory)
		}
	}
	_, err = c.CreateSession(ctx, "repo", session.CreateRequest{Name: "sh", Agent: "shell", Disposable: true}, 30*time.Second)
	if apperr.KindOf(err) != apperr.KindInvalid || !strings.Contains(err.Error(), "no memory file") {
		t.Fatalf("a disposable shell session: %v, want it refused", err)
	}
	if list := must("chat", "repo", "--list"); strings.Contains(list, "repo/sh ") {
		t.Fatalf("the refused session was made:\n%s", list)
	}
}
