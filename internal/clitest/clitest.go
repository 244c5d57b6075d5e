// Package clitest runs paddock's CLI in tests: a home of its own (a PADDOCK_HOME
// directory), an environment passed in rather than set on the process, the CLI run
// in-process with both, the daemon it starts given the same environment, and a teardown
// that leaves nothing behind. Tests that each have a Home share nothing through the
// process, so they can run in parallel (t.Setenv would forbid it).
//
// The daemon is the test binary itself, started as "paddock serve": a package using
// this runs the full program (servecmd.Main) from its TestMain when os.Args[0] is
// "paddock", or sets Home.Executable.
package clitest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/servecmd"
)

// Home is one isolated paddock: its PADDOCK_HOME directory and the environment its
// commands and its daemon run with.
type Home struct {
	// Dir is the PADDOCK_HOME directory, short (a unix socket's path has 107 bytes) and
	// searchable by all (as root, sandboxes run as a uid that must reach their files).
	Dir string
	// Executable is the program the daemon is started from; empty for this test binary.
	Executable string

	tb  testing.TB
	mu  sync.Mutex
	env map[string]string
}

// New makes a Home for tb, its environment the process's with PADDOCK_HOME set to it,
// torn down (see Teardown) when tb ends.
func New(tb testing.TB) *Home {
	tb.Helper()
	dir, err := MakeDir()
	if err != nil {
		tb.Fatal(err)
	}
	h := &Home{Dir: dir, tb: tb, env: map[string]string{}}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			h.env[k] = v
		}
	}
	h.env["PADDOCK_HOME"] = dir
	tb.Cleanup(func() { Teardown(dir, h.Environ, h.Executable) })
	return h
}

// MakeDir makes a directory for a PADDOCK_HOME: short, under the system's temporary
// directory, mode 0711.
func MakeDir() (string, error) {
	dir, err := os.MkdirTemp("", "pdk")
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o711)
}

// Setenv sets a variable of the home's environment, for the commands run after and
// the daemon started after.
func (h *Home) Setenv(key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.env[key] = value
}

// Getenv reads a variable of the home's environment.
func (h *Home) Getenv(key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.env[key]
}

// Environ is the home's environment as KEY=value lines, sorted.
func (h *Home) Environ() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	env := make([]string, 0, len(h.env))
	for k, v := range h.env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// Paths are the home's paddock paths.
func (h *Home) Paths() config.Paths {
	p, err := config.ForHome(h.Dir)
	if err != nil {
		h.tb.Fatal(err)
	}
	return p
}

// Factory is the CLI's factory for this home: the full program's commands (paddock-full's,
// as this test binary is), the home's environment, its paths, and a daemon started with
// both.
func (h *Home) Factory(streams cli.IOStreams) *cli.Factory {
	f := cli.NewFactory(streams)
	f.More = servecmd.Commands
	f.Getenv, f.Environ = h.Getenv, h.Environ
	if h.Executable != "" {
		exe := h.Executable
		f.Executable = func() (string, error) { return exe, nil }
	}
	return f
}

// Run runs paddock in-process with stdin as its input, and returns its stdout, stderr
// and exit code.
func (h *Home) Run(stdin string, args ...string) (stdout, stderr string, code int) {
	var out, errOut strings.Builder
	f := h.Factory(cli.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	code = cli.Run(context.Background(), f, args)
	return out.String(), errOut.String(), code
}

// MustIn is Run that fails the test on a non-zero exit, and returns stdout.
func (h *Home) MustIn(stdin string, args ...string) string {
	h.tb.Helper()
	out, errOut, code := h.Run(stdin, args...)
	if code != 0 {
		h.tb.Fatalf("paddock %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// Must is MustIn with no input.
func (h *Home) Must(args ...string) string {
	h.tb.Helper()
	return h.MustIn("", args...)
}

// Daemon starts the home's daemon, when none runs, and returns its pid.
func (h *Home) Daemon(ctx context.Context) int {
	h.tb.Helper()
	if _, err := h.Factory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}).Client(ctx); err != nil {
		h.tb.Fatalf("start the daemon of %s: %v", h.Dir, err)
	}
	return DaemonPID(h.Dir)
}

// InitRepo makes a git repository named name in the home, on branch main with one empty
// commit, and returns its path.
func (h *Home) InitRepo(name string) string {
	h.tb.Helper()
	repo := filepath.Join(h.Dir, name)
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo},
		{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			h.tb.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return repo
}

// Teardown removes every sandbox of the home at dir and stops its daemon (started first
// with environ and exe, "" for this binary, when none runs but one ran before: a sandbox
// left by a crashed daemon goes too), waits for the daemon's process to end, and removes
// dir: nothing outlives the test.
func Teardown(dir string, environ func() []string, exe string) {
	defer os.RemoveAll(dir)
	if _, err := os.Stat(filepath.Join(dir, "state")); err != nil {
		return // no daemon ever ran here, so no sandbox was made
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	os.Remove(filepath.Join(dir, "config.toml")) // a test may have left a broken one
	f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	f.Paths = func() (config.Paths, error) { return config.ForHome(dir) }
	if environ != nil {
		f.Environ = environ
	}
	if exe != "" {
		f.Executable = func() (string, error) { return exe, nil }
	}
	c, err := f.Client(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "teardown of %s: %v\n", dir, err)
		return
	}
	RemoveSandboxes(ctx, c)
	pid := DaemonPID(dir)
	c.StopDaemon(ctx)
	// Wait for the process itself, not only its socket: a daemon stopping finishes work of
	// its backends first (a Vagrant machine being destroyed, in the home removed next).
	for i := 0; i < 9000 && pid > 0; i++ {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RemoveSandboxes removes every sandbox of the daemon c talks to, running or not, with
// no final snapshot.
func RemoveSandboxes(ctx context.Context, c *client.Client) {
	if list, err := c.List(ctx); err == nil {
		for _, sb := range list {
			if _, err := c.Remove(ctx, sb.Name, wire.RemoveRequest{Force: true, Purge: true}, nil); err != nil {
				fmt.Fprintf(os.Stderr, "teardown: remove %s: %v\n", sb.Name, err)
			}
		}
	}
}

// DaemonPID is the pid of the daemon of the PADDOCK_HOME dir, 0 when none runs.
func DaemonPID(dir string) int {
	data, err := os.ReadFile(filepath.Join(dir, "state", "daemon.lock"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// Kill kills the process pid with SIGKILL (nothing when pid is 0 or gone) and waits
// until it has let go of its files: a leader that is a zombie while other threads still
// exit holds a daemon's socket, and a client then gets a reset.
func Kill(pid int) error {
	if pid <= 0 || syscall.Kill(pid, syscall.SIGKILL) != nil {
		return nil
	}
	for i := 0; i < 500; i++ {
		if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err != nil || len(fds) == 0 {
			return nil // gone, or a zombie waiting for init with nothing open
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("process %d did not die", pid)
}
