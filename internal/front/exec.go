package front

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/termtext"
)

// Exec is one `paddock exec` (or `shell`): a command in a sandbox.
type Exec struct {
	Name string
	Argv []string
	Env  []string
	Dir  string
	TTY  bool
	// Shell is `paddock shell`: an interactive shell, whose own failures (no such
	// sandbox) exit as every other command's do, not with ExecFailed.
	Shell bool
}

// ExecFailed is exec's exit code for its own failures, distinct from the process's (as
// docker exec's 125).
const ExecFailed = 125

// RunExec runs e in its sandbox through c with s's streams: with a terminal when asked
// (stdin's, in raw mode and resized with it, when stdin is one). It returns the
// process's exit code, or an error of exec itself (and 127 with an error when the
// command was not found).
func RunExec(ctx context.Context, c *wire.Client, s Streams, e Exec) (int, error) {
	req := wire.ExecRequest{Argv: e.Argv, Env: e.Env, Dir: e.Dir, TTY: e.TTY}
	eio := wire.ExecIO{Stdin: s.In, Stdout: s.Out, Stderr: s.ErrOut}
	if !e.TTY {
		if fi, ok := s.In.(*os.File); ok && term.IsTerminal(int(fi.Fd())) {
			eio.Stdin = nil // an interactive terminal is not input for a batch command
		}
		return c.Exec(ctx, e.Name, req, eio)
	}
	in, isFile := s.In.(*os.File)
	if !isFile || !term.IsTerminal(int(in.Fd())) {
		req.Env = append([]string{"TERM=xterm-256color"}, req.Env...)
		req.Rows, req.Cols = 24, 80
		return c.Exec(ctx, e.Name, req, eio)
	}
	fd := int(in.Fd())
	if cols, rows, err := term.GetSize(fd); err == nil {
		req.Rows, req.Cols = uint16(rows), uint16(cols)
	}
	if tv := os.Getenv("TERM"); tv != "" {
		req.Env = append([]string{"TERM=" + tv}, req.Env...)
	}
	old, err := term.MakeRaw(fd)
	if err != nil {
		return 0, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	defer term.Restore(fd, old)
	resize := make(chan [2]uint16, 1)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	go func() {
		for range winch {
			if cols, rows, err := term.GetSize(fd); err == nil {
				select {
				case resize <- [2]uint16{uint16(rows), uint16(cols)}:
				default:
				}
			}
		}
	}()
	eio.Resize = resize
	return c.Exec(ctx, e.Name, req, eio)
}

// ExecExit is the exit code of an exec that ended with code and err (RunExec's), with
// what went wrong written to w: the process's own code; 127, said, when the command was
// not found; ExecFailed, said, for a failure of exec itself.
func ExecExit(w io.Writer, code int, err error) int {
	if err == nil {
		return code
	}
	Report(w, err)
	if code == 127 {
		return 127
	}
	return ExecFailed
}

// ShellExit is ExecExit for `paddock shell`: a failure of the command itself exits by
// its kind (3 for a sandbox not found), as every command but exec does; exec keeps
// ExecFailed so that a script tells its own failure from the process's code.
func ShellExit(w io.Writer, code int, err error) int {
	if err == nil || code == 127 {
		return ExecExit(w, code, err)
	}
	Report(w, err)
	return CodeOf(err)
}

// Report writes an error as the user sees it: "paddock: MESSAGE" and, when it has one,
// "hint: WHAT TO DO". The text may come from a sandbox or a cluster (a name, a pod's
// events): its control characters are shown, never sent to the terminal as they are.
func Report(w io.Writer, err error) {
	fmt.Fprintf(w, "paddock: %s\n", termtext.Escape(err.Error()))
	if hint := apperr.HintOf(err); hint != "" {
		fmt.Fprintf(w, "hint: %s\n", termtext.Escape(hint))
	}
}

// CodeOf is the exit code of an error by its kind: 2 bad input, 3 not found, 4 a
// conflict with the current state, 5 unavailable here, else 1.
func CodeOf(err error) int {
	switch apperr.KindOf(err) {
	case apperr.KindInvalid:
		return 2
	case apperr.KindNotFound:
		return 3
	case apperr.KindConflict:
		return 4
	case apperr.KindUnavailable:
		return 5
	case apperr.KindCheckFailed:
		return 6
	}
	return 1
}
