package servecmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/backend/conform"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/daemon"
	"github.com/paddockhq/paddock/internal/gitsrc"
)

// daemonVerify is the checks only a daemon's sandbox shows, made through a private
// daemon verify runs in this process on a home of its own.
type daemonVerify struct {
	// Backend is the local backend the private daemon's sandbox ran on.
	Backend string           `json:"backend"`
	Checks  []conform.Result `json:"checks"`
	// Seconds is the section's whole time: the private daemon, its sandbox and the checks.
	Seconds float64 `json:"seconds"`
}

// daemonCheck is one of the daemon section's checks.
type daemonCheck struct {
	name string
	run  func(context.Context, *verifyDaemon) (conform.Status, string, []string)
}

// daemonSuite is the daemon section's checks, in order: the key's search first, before
// any other check writes in the sandbox.
func daemonSuite() []daemonCheck {
	all := []daemonCheck{{"KeyNowhereInside", checkKeyNowhereInside}, {"ProxyFailsClosed", checkProxyFailsClosed},
		{"TerminalEscapes", checkTerminalEscapes}}
	if daemonSuiteOnly > 0 {
		return all[:daemonSuiteOnly]
	}
	return all
}

// daemonSuiteOnly, when a test sets it, runs only that many of the checks.
var daemonSuiteOnly int

// verifyDaemonHook, when a test sets it, acts on the private daemon's sandbox before the
// checks run (plants what a check must find).
var verifyDaemonHook func(context.Context, *verifyDaemon)

// verifyDaemon is a private daemon verify started: its paths, its made-up key and a
// way to run paddock's commands against it.
type verifyDaemon struct {
	paths   config.Paths
	log     string
	key     string
	backend string
	logger  *slog.Logger
	// halt stops the daemon (its sandboxes keep running); nil while it is stopped.
	halt func()
	// stop removes the daemon's sandboxes and stops it, once.
	stop func()
}

// serve starts the private daemon in this process and waits for it to answer.
func (d *verifyDaemon) serve(ctx context.Context) error {
	ready, stopped := make(chan struct{}), make(chan struct{})
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var runErr error
	go func() {
		defer close(stopped)
		runErr = daemon.Run(dctx, daemon.Options{Paths: d.paths, Version: cli.Version, Ready: func() { close(ready) }, Logger: d.logger})
	}()
	halt := func() {
		cancel()
		<-stopped
		d.halt = nil
	}
	select {
	case <-ready:
		d.halt = halt
		return nil
	case <-stopped:
		cancel()
		return fmt.Errorf("the private daemon verify starts did not start: %v", runErr)
	case <-time.After(30 * time.Second):
		halt()
		return fmt.Errorf("the private daemon verify starts did not answer within 30s")
	}
}

// daemonChecks runs the daemon's checks on backend, with a private daemon in a home
// under dir holding a made-up anthropic key, and removes all it made.
func daemonChecks(ctx context.Context, dir, backend string, progress func(conform.Result)) ([]conform.Result, error) {
	d, err := startVerifyDaemon(ctx, dir, backend)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	if verifyDaemonHook != nil {
		verifyDaemonHook(ctx, d)
	}
	var results []conform.Result
	for _, c := range daemonSuite() {
		start := time.Now()
		st, why, notes := c.run(ctx, d)
		r := conform.Result{Name: c.name, Status: st, Why: why, Notes: notes, Seconds: time.Since(start).Seconds()}
		progress(r)
		results = append(results, r)
	}
	return results, nil
}

// startVerifyDaemon starts a daemon in this process on a home of its own under dir,
// never the user's (whose keys in the environment it does not see), with a made-up key
// for anthropic set as a user sets one, and a repository to make a sandbox of.
func startVerifyDaemon(ctx context.Context, dir, backend string) (*verifyDaemon, error) {
	home := filepath.Join(dir, "d")
	if err := os.Mkdir(home, 0o711); err != nil {
		return nil, err
	}
	p, err := config.ForHome(home)
	if err != nil {
		return nil, err
	}
	if err := p.MkdirAll(); err != nil {
		return nil, err
	}
	logPath := filepath.Join(home, "daemon.log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	// The user's own keys in this process's environment stay out of the private daemon:
	// the key it holds is the made-up one.
	restore := map[string]string{}
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"} {
		if v, ok := os.LookupEnv(k); ok {
			restore[k] = v
			os.Unsetenv(k)
		}
	}
	d := &verifyDaemon{paths: p, log: logPath, backend: backend,
		logger: slog.New(slog.NewTextHandler(lf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	var once sync.Once
	d.stop = func() {
		once.Do(func() {
			// Its sandboxes go first: the daemon keeps them running when it stops.
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer rcancel()
			if d.halt != nil || d.serve(ctx) == nil {
				c := client.NewClient(p.Socket)
				if list, err := c.List(rctx); err == nil {
					for _, s := range list {
						c.Remove(rctx, s.Name, wire.RemoveRequest{Force: true, Purge: true}, nil)
					}
				}
			}
			if d.halt != nil {
				d.halt()
			}
			lf.Close()
			for k, v := range restore {
				os.Setenv(k, v)
			}
		})
	}
	if err := d.serve(ctx); err != nil {
		d.stop()
		return nil, err
	}
	b := make([]byte, 24)
	rand.Read(b)
	d.key = "sk-ant-api03-" + hex.EncodeToString(b)
	if _, err := client.NewClient(p.Socket).SetKey(ctx, "anthropic", d.key); err != nil {
		d.stop()
		return nil, fmt.Errorf("set the private daemon's key: %w", err)
	}
	repo := filepath.Join(home, "repo")
	if err := os.MkdirAll(repo, 0o700); err != nil {
		d.stop()
		return nil, err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"},
		{"-c", "user.name=verify", "-c", "user.email=verify@paddock.invalid", "commit", "-q", "--allow-empty", "-m", "verify"}} {
		if _, err := gitsrc.Git(ctx, repo, args...); err != nil {
			d.stop()
			return nil, err
		}
	}
	if out, err := d.run(ctx, "up", repo, "--backend", backend, "--agent", "shell,claude"); err != nil {
		d.stop()
		return nil, fmt.Errorf("make a sandbox through the private daemon: %v: %s", err, out)
	}
	return d, nil
}

// run runs a paddock command in this process against the private daemon, giving what
// it printed on stdout, and on stderr when it fails.
func (d *verifyDaemon) run(ctx context.Context, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	f.Paths = func() (config.Paths, error) { return d.paths, nil }
	if code := cli.Run(ctx, f, args); code != 0 {
		return out.String() + errOut.String(), fmt.Errorf("paddock %s: exit %d", args[0], code)
	}
	return out.String(), nil
}

// inside runs a shell script in the private daemon's sandbox, with the environment a
// session there gets.
func (d *verifyDaemon) inside(ctx context.Context, script string, args ...string) (string, error) {
	return d.run(ctx, append([]string{"exec", "repo", "--", "sh", "-c", script, "sh"}, args...)...)
}

// checkKeyNowhereInside: the key the daemon holds is nowhere in its sandbox (no
// process's environment or command line, no file of the home, workspace, /tmp or /etc),
// the placeholder is there instead, and the daemon's log does not hold it either.
func checkKeyNowhereInside(ctx context.Context, d *verifyDaemon) (conform.Status, string, []string) {
	env, err := d.inside(ctx, `printf %s "$ANTHROPIC_API_KEY"`)
	if err != nil {
		return conform.Fail, "read the sandbox's ANTHROPIC_API_KEY: " + firstLine(env), nil
	}
	if env == "" || env == d.key {
		return conform.Fail, fmt.Sprintf("the sandbox's ANTHROPIC_API_KEY is %s, not a placeholder: the check cannot tell where the key would go",
			map[bool]string{true: "the key", false: "empty"}[env == d.key]), nil
	}
	var found []string
	// Every process's environment and command line, as the sandbox's user reads them;
	// the script's own command line holds nothing of the key.
	procs, err := d.inside(ctx, `for p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null; done; echo; echo procs-read`)
	if err != nil || !strings.Contains(procs, "procs-read") {
		return conform.Fail, "read the sandbox's processes: " + firstLine(procs), nil
	}
	if !strings.Contains(procs, env) {
		return conform.Fail, "the placeholder is in no process's environment: the check read nothing", nil
	}
	if strings.Contains(procs, d.key) {
		found = append(found, "a process's environment or command line (/proc/*/environ, /proc/*/cmdline)")
	}
	// Files: grep is given the key's second half, so no file holds its own pattern.
	half := d.key[len(d.key)/2:]
	files, err := d.inside(ctx, `grep -rlF -e "$1" /home /workspace /tmp /etc 2>/dev/null; echo files-read`, half)
	if err != nil || !strings.Contains(files, "files-read") {
		return conform.Fail, "search the sandbox's files: " + firstLine(files), nil
	}
	for _, l := range strings.Split(strings.TrimSpace(files), "\n") {
		if l != "files-read" && l != "" {
			found = append(found, "file "+l)
		}
	}
	if b, err := os.ReadFile(d.log); err == nil && bytes.Contains(b, []byte(d.key)) {
		found = append(found, "the daemon's log")
	}
	notes := []string{"searched: every process's environ and cmdline, the files under /home /workspace /tmp /etc, the daemon's log; the placeholder was there instead",
		"snapshots not searched: paddock's snapshot store is S3 only, and verify starts no S3 server"}
	if len(found) > 0 {
		return conform.Fail, "the daemon's API key is inside the sandbox, in:\n" + strings.Join(found, "\n"), notes
	}
	return conform.Pass, "", notes
}
