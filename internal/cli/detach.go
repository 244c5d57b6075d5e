package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/session"
)

// attachSession attaches the terminal to session name of sandbox sb (every session,
// with name "") after saying which keys detach. The sandbox's tmux takes Ctrl-b as its
// prefix; inside the user's own tmux with that prefix too, Ctrl-b d would detach the
// user's tmux instead, so the keys said are the ones that reach the sandbox's.
func attachSession(ctx context.Context, f *Factory, sb, name string) error {
	fmt.Fprintf(f.IO.ErrOut, "paddock: %s detaches (the session keeps running)\n", detachKeys(os.Getenv("TMUX"), outerPrefix))
	return runExec(ctx, f, &execOptions{name: sb, argv: session.AttachArgv(name), tty: true})
}

// detachKeys are the keys that detach from the sandbox's tmux, typed in a terminal
// whose $TMUX is tmuxEnv (empty outside tmux). prefix reads the prefix key of the tmux
// server at a socket. A user's tmux whose prefix is Ctrl-b too keeps the key for
// itself, and sends it on when pressed twice (tmux's default binding, send-prefix).
func detachKeys(tmuxEnv string, prefix func(socket string) string) string {
	socket, _, _ := strings.Cut(tmuxEnv, ",")
	if socket == "" || prefix(socket) != "C-b" {
		return "Ctrl-b d"
	}
	return "inside your tmux, Ctrl-b Ctrl-b d (Ctrl-b d alone detaches your own tmux)"
}

// outerPrefix is the prefix key of the user's tmux server at socket ("C-b", "C-a"), or
// "C-b", tmux's default, when it does not answer.
func outerPrefix(socket string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tmux", "-S", socket, "show-options", "-gv", "prefix").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "C-b"
	}
	return strings.TrimSpace(string(out))
}
