package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/shell"
)

// attachSession attaches the terminal to session name of sandbox sb (every session,
// with name "") after saying which keys detach. The sandbox's tmux takes Ctrl-b as its
// prefix; inside the user's own tmux with that prefix too, Ctrl-b d would detach the
// user's tmux instead: there the session opens in a window of the user's tmux of its
// own, which the user leaves with their own keys, and the pane they typed in stays
// theirs.
func attachSession(ctx context.Context, f *Factory, sb, name string) error {
	tmuxEnv := f.Getenv("TMUX")
	if tmuxEnv != "" && f.Getenv(inWindowEnv) == "" && isTerminal(f.IO.Out) {
		if socket, _, _ := strings.Cut(tmuxEnv, ","); outerPrefix(socket) == "C-b" {
			return attachInWindow(ctx, f, socket, sb, name)
		}
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: %s detaches (the session keeps running)\n", detachKeys(tmuxEnv, outerPrefix))
	return runExec(ctx, f, &execOptions{name: sb, argv: wire.AttachArgv(name), tty: true})
}

// inWindowEnv marks a paddock that attach started in a window of the user's tmux, which
// attaches there and opens no further window.
const inWindowEnv = "PADDOCK_TMUX_WINDOW"

// attachInWindow opens a window in the user's tmux server at socket that runs this
// paddock's attach to sb (its session name, with name not ""), with the daemon and
// context this command talks to, and says how to come back and how to detach.
func attachInWindow(ctx context.Context, f *Factory, socket, sb, name string) error {
	self, err := f.Executable()
	if err != nil {
		return err
	}
	target, argv := sb, []string{self, "attach", sb}
	if name != "" {
		target, argv = sb+"/"+name, []string{self, "chat", sb + "/" + name}
	}
	args := []string{"-S", socket, "new-window", "-n", target, "-e", inWindowEnv + "=1"}
	if dir, err := os.Getwd(); err == nil {
		args = append(args, "-c", dir)
	}
	if p, err := f.Paths(); err == nil && p.Home != "" {
		args = append(args, "-e", "PADDOCK_HOME="+p.Home)
	}
	if f.remote != "" {
		args = append(args, "-e", "PADDOCK_CONTEXT="+f.remote)
	}
	// One word to tmux, which runs it with the shell: each argument quoted.
	args = append(args, shell.Join(argv))
	if out, err := exec.CommandContext(ctx, "tmux", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("open a window in your tmux: %v: %s", err, strings.TrimSpace(string(out)))
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: %s is open in a new window of your tmux: Ctrl-b l comes back here; "+
		"in it, Ctrl-b Ctrl-b d detaches (the session keeps running)\n", target)
	return nil
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
