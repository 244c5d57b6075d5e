package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/config"
)

// Factory gives commands what they share: streams, paths and a daemon client.
type Factory struct {
	IO IOStreams
	// Paths resolves paddock's files.
	Paths func() (config.Paths, error)
	// Executable is the binary to start the daemon from.
	Executable func() (string, error)
	// Getenv reads the environment the command runs in: os.Getenv, or the one a caller
	// running many CLIs in one process (a test with many homes) gives each.
	Getenv func(string) string
	// Environ is the environment of the daemon a command starts, as Getenv reads it.
	Environ func() []string
	// Context is --context: the daemon to talk to, by its context's name.
	Context string
	// NonInteractive is --non-interactive: never ask, fail with the command that says it.
	NonInteractive bool
	// More gives the commands beyond the client's, added to the root: the full program's
	// serve, verify, host, backend serve and guest (package servecmd), which run the
	// daemon's, a backend's or the guest's code in this process. Nil for the client alone.
	More func(*Factory) []*cobra.Command
	// command is the command line's verb path ("chat", "attach"), for the commands a
	// failure names.
	command string
	// remote is the name of the remote context Client connected to; empty for local.
	remote string
}

// NewFactory returns the factory used by Main.
// Its paths come from the environment Getenv reads.
func NewFactory(io IOStreams) *Factory {
	f := &Factory{IO: io, Executable: os.Executable, Getenv: os.Getenv, Environ: os.Environ}
	f.Paths = func() (config.Paths, error) { return config.ResolveEnv(f.Getenv) }
	return f
}

// homeDir is the user's home directory, $HOME as Getenv reads it.
func (f *Factory) homeDir() (string, error) {
	if h := f.Getenv("HOME"); h != "" {
		return h, nil
	}
	return "", errors.New("$HOME is not defined")
}

// Client returns a client of a running daemon, starting one in the background (and
// saying so on stderr) when none answers.
func (f *Factory) Client(ctx context.Context) (*client.Client, error) {
	p, err := f.Paths()
	if err != nil {
		return nil, err
	}
	if rc, name, err := f.remoteClient(p); err != nil {
		return nil, err
	} else if rc != nil {
		// A remote daemon is never started from here: it answers, or the command says so.
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := rc.Version(pctx); err != nil {
			return nil, apperr.Unavailable("check the server, or talk to this machine's daemon: --context local (or `paddock context use local`)",
				"the daemon of context %s does not answer: %v", name, err)
		}
		f.remote = name
		return rc, nil
	}
	return f.localClient(ctx, p)
}

// localClient returns a client of this machine's daemon, starting one when none answers.
func (f *Factory) localClient(ctx context.Context, p config.Paths) (*client.Client, error) {
	c := client.NewClient(p.Socket)
	var err error
	// A daemon that was just killed can take a moment to let go of its socket: until then
	// a connection is taken and reset (or the write finds the pipe broken). Asking again
	// shortly sees it gone.
	for try := 0; ; try++ {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = c.Version(pctx)
		cancel()
		if err == nil {
			return c, nil
		}
		if try == 20 || !(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !daemonAbsent(err) {
		return nil, fmt.Errorf("the daemon at %s does not answer: %w", p.Socket, err)
	}
	pid, err := f.startDaemon(ctx, p)
	for try := 0; errors.Is(err, errLockHeld) && try < 50; try++ {
		time.Sleep(100 * time.Millisecond)
		if _, verr := c.Version(ctx); verr == nil {
			return c, nil // the holder was starting, not stopping
		}
		pid, err = f.startDaemon(ctx, p)
	}
	if errors.Is(err, errLockHeld) {
		return nil, apperr.Unavailable("stop it with `paddock daemon stop`, or see its log",
			"a paddock daemon holds this PADDOCK_HOME's lock but does not answer on %s", p.Socket)
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: started the daemon in the background (pid %d, log %s)\n", pid, p.DaemonLog())
	return c, nil
}

// errLockHeld is a daemon that exited at once because another holds the lock.
var errLockHeld = errors.New("another daemon holds the lock")

// daemonAbsent tells "nobody listens" from other failures.
func daemonAbsent(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// startDaemon runs `paddock serve --foreground` detached, in its own session, logging to
// the daemon log (which it rotates), and waits until it answers. A daemon that exits at
// once (a bad config file) has its log shown.
func (f *Factory) startDaemon(ctx context.Context, p config.Paths) (int, error) {
	if err := p.MkdirAll(); err != nil {
		return 0, err
	}
	exe, err := f.Executable()
	if err != nil {
		return 0, err
	}
	logf, err := os.OpenFile(p.DaemonLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	start, _ := logf.Seek(0, 2)
	cmd := exec.Command(exe, "serve", "--foreground", "--log-file", p.DaemonLog())
	cmd.Args[0] = "paddock"
	cmd.Env = f.Environ()
	if p.Home != "" {
		cmd.Env = append(cmd.Env, "PADDOCK_HOME="+p.Home)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start the daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	c := client.NewClient(p.Socket)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-exited:
			// Another daemon may have won the race for the lock: use it. Or one that was
			// told to stop still holds it: start again once it has let go.
			if v, err := c.Version(ctx); err == nil {
				return v.PID, nil
			}
			if strings.Contains(logSince(p.DaemonLog(), start), "already running") {
				return 0, errLockHeld
			}
			return 0, apperr.Unavailable("fix the problem above and run the command again; `paddock serve --foreground` shows the daemon's output",
				"the daemon failed to start: %s", logSince(p.DaemonLog(), start))
		case <-deadline:
			return 0, fmt.Errorf("the daemon did not answer within 30 s: see %s", p.DaemonLog())
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
			if _, err := c.Version(ctx); err == nil {
				return cmd.Process.Pid, nil
			}
		}
	}
}

// logSince returns what the log at path holds past off, or all of it when the daemon
// rotated it meanwhile.
func logSince(path string, off int64) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	if int64(len(data)) < off {
		off = 0
	}
	return strings.TrimSpace(string(data[off:]))
}
