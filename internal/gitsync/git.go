// Package gitsync moves work between a host repository and a sandbox's /workspace with
// git, always started from the host: the host fetches through the guest (git
// upload-pack runs inside the sandbox, its stream handed to host git over the fd::
// transport; a push goes through the git-remote-paddock helper), so host git never runs
// inside a .git the sandbox can write. Every host git command here runs with hooks,
// fsmonitor, external diff and textconv turned off, so nothing the sandbox wrote can make
// the host run a program.
package gitsync

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/paddockhq/paddock/internal/tailbuf"
)

// safeConfig turns off every way a repository's content or config could run a program
// in a host git command on fetched work, and the packfile URIs a sandbox's upload-pack
// could offer (a URL of its choosing that host git would fetch).
var safeConfig = append(HostConfig(),
	"-c", "fetch.recurseSubmodules=false",
	"-c", "submodule.recurse=false",
	"-c", "protocol.paddock.allow=always",
	"-c", "core.sshCommand=false",
	"-c", "fetch.uriProtocols=",
)

// HostConfig is what every host git command takes before its own arguments so that no
// config of the repository (nor the user's) makes it run a program: no hooks, no
// fsmonitor, no external diff. Commands on fetched work add more (safeConfig); a command
// that may check files out or compare their content turns filters off too (NoFilters).
func HostConfig() []string {
	return []string{
		"-c", "core.hooksPath=/dev/null",
		"-c", "core.fsmonitor=false",
		"-c", "core.untrackedCache=false",
		"-c", "diff.external=",
	}
}

// Git runs host git commands in one repository.
type Git struct {
	// Repo is the host repository's top directory.
	Repo string
	// HelperDir is a directory holding git-remote-paddock, put first on PATH.
	HelperDir string
	// Env is added to git's environment (PADDOCK_HOME for the helper).
	Env []string
	// Environ, when set, is the environment git starts from and the one read for where
	// its config is (HOME, XDG_CONFIG_HOME, GIT_CONFIG_*); nil means this process's.
	Environ []string
	// Notes, when set, is told in a line what a sync would otherwise wait on in silence:
	// another sync of the sandbox into the repository, still running.
	Notes io.Writer

	hooks struct {
		once sync.Once
		path string
	}
}

// Run runs git with args and returns its standard output.
func (g *Git) Run(ctx context.Context, args ...string) (string, error) {
	return g.RunInput(ctx, nil, args...)
}

// RunInput is Run with standard input.
func (g *Git) RunInput(ctx context.Context, stdin []byte, args ...string) (string, error) {
	var in io.Reader
	if stdin != nil {
		in = bytes.NewReader(stdin)
	}
	var stdout bytes.Buffer
	err := g.run(ctx, in, &stdout, args...)
	return stdout.String(), err
}

// RunTo runs git with args, writing its standard output to w as git makes it: for output
// too large to hold, such as a diff of everything a sandbox changed.
func (g *Git) RunTo(ctx context.Context, w io.Writer, args ...string) error {
	return g.run(ctx, nil, w, args...)
}

// run runs git with args, stdin (when not nil) as its input and its output written to
// stdout; a failure says what git said last on its standard error.
func (g *Git) run(ctx context.Context, stdin io.Reader, stdout io.Writer, args ...string) error {
	cmd := g.command(ctx, args...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stderr tailbuf.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		return gitError(args, err, &stderr)
	}
	return nil
}

// gitError says that git with args failed with err, and what it said last on stderr.
func gitError(args []string, err error, stderr *tailbuf.Buffer) error {
	return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
}

// early is a git command started before its input is known: its process start and git's
// own setting up (config, the repository) overlap other work, and it runs once given its
// input on stdin, or is ended unused.
type early struct {
	args   []string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout bytes.Buffer
	stderr tailbuf.Buffer
	err    error // from starting it
}

// startEarly starts git with args, waiting for its input.
func (g *Git) startEarly(ctx context.Context, args ...string) *early {
	e := &early{args: args, cmd: g.command(ctx, args...)}
	e.cmd.Stdout, e.cmd.Stderr = &e.stdout, &e.stderr
	if e.stdin, e.err = e.cmd.StdinPipe(); e.err == nil {
		e.err = e.cmd.Start()
	}
	return e
}

// finish gives the command its input and returns its standard output, as Run does.
func (e *early) finish(input string) (string, error) {
	if e.err != nil {
		return "", e.err
	}
	_, werr := io.WriteString(e.stdin, input)
	e.stdin.Close()
	if err := e.cmd.Wait(); err != nil {
		return "", gitError(e.args, err, &e.stderr)
	}
	if werr != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(e.args, " "), werr)
	}
	return e.stdout.String(), nil
}

// end ends the command unused.
func (e *early) end() {
	if e.err == nil {
		e.cmd.Process.Kill()
		e.stdin.Close()
		e.cmd.Wait()
	}
}

// command is git with args in the repository, hardened (safeConfig, no system config,
// no prompts).
func (g *Git) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append(append([]string{"-C", g.Repo}, safeConfig...), args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(g.environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1")
	if g.HelperDir != "" {
		cmd.Env = append(cmd.Env, "PATH="+g.HelperDir+string(os.PathListSeparator)+g.getenv("PATH"))
	}
	cmd.Env = append(cmd.Env, g.Env...)
	return cmd
}

// environ is the environment git starts from: Environ, else this process's.
func (g *Git) environ() []string {
	if g.Environ != nil {
		return slices.Clip(g.Environ)
	}
	return os.Environ()
}

// getenv reads a variable of environ.
func (g *Git) getenv(key string) string {
	if g.Environ == nil {
		return os.Getenv(key)
	}
	for i := len(g.Environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(g.Environ[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// homeDir is the user's home directory in environ; "" when it is not known.
func (g *Git) homeDir() string {
	if g.Environ != nil {
		return g.getenv("HOME")
	}
	home, _ := os.UserHomeDir()
	return home
}

// Refs lists refs under prefix as name → object id.
func (g *Git) Refs(ctx context.Context, prefix string) (map[string]string, error) {
	if refs, ok := g.refsFromFiles(prefix); ok {
		return refs, nil
	}
	out, err := g.Run(ctx, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, id, ok := strings.Cut(line, " "); ok {
			refs[name] = id
		}
	}
	return refs, nil
}

// NoFilters is config that turns off every filter driver defined for the repository in
// dir (its config, the user's, the system's): a command that compares files' content with
// these runs no clean or smudge program. A file whose filter changes its content (git-lfs)
// and whose stat git no longer trusts may then show as changed.
func NoFilters(ctx context.Context, dir string) []string {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "config", "--name-only", "--get-regexp", `^filter\..+\.(clean|smudge|process|required)$`)
	out, _ := cmd.Output()
	var args []string
	seen := map[string]bool{}
	for _, key := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		i := strings.LastIndex(key, ".")
		if i <= 0 || seen[key[:i]] {
			continue
		}
		d := key[:i]
		seen[d] = true
		args = append(args, "-c", d+".clean=", "-c", d+".smudge=", "-c", d+".process=", "-c", d+".required=false")
	}
	return args
}
