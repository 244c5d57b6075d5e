package task

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/archive"
	"github.com/paddockhq/paddock/internal/gitsrc"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// setupOutputKept is how much of the end of a failing setup's output the task's Error
// keeps.
const setupOutputKept = 2048

// prepare makes what a task's attempts still lack: the prepared base (when the task has
// a setup and an attempt still needs its sandbox), each attempt's sandbox, its branch
// and its agent at the prompt. It is what Create starts, and what a restart runs again
// for a task still preparing: each step looks first at what is there.
func (s *Service) prepare(ctx context.Context, name string) {
	t, err := s.Get(ctx, name)
	if err != nil {
		return
	}
	var need []wire.Attempt
	for _, a := range t.Attempts {
		if a.State == wire.AttemptStarting {
			need = append(need, a)
		}
	}
	var seed *seedSource
	var base *preparedBase
	if s.missingSandbox(ctx, need) {
		if seed, err = newSeedSource(ctx, t.Repo); err != nil {
			s.fail(ctx, name, fmt.Sprintf("read the repository %s: %v", t.Repo, err), "the repository could not be read: see the task's error")
			return
		}
		defer seed.remove()
		if t.Setup != "" {
			// The base is prepared while the attempts' sandboxes are made, which take
			// its copy once it is ready.
			base = &preparedBase{ready: make(chan struct{})}
			go func() {
				defer close(base.ready)
				base.archive, base.err = s.prepareBase(ctx, t, seed)
			}()
			defer func() {
				<-base.ready
				if base.archive != "" {
					os.Remove(base.archive)
				}
			}()
		}
	}
	var wg sync.WaitGroup
	for _, a := range need {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.startAttempt(ctx, t, a, seed, base)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // the daemon stops: its restart prepares again
	}
	if base != nil {
		if _, err := base.wait(ctx); err != nil {
			s.fail(ctx, name, err.Error(), errSetupFailed.Error())
			return
		}
	}
	s.update(ctx, name, func(t *wire.Task) error {
		if t.State != wire.TaskPreparing {
			return nil
		}
		t.State = wire.TaskRunning
		if started(t) == 0 {
			t.State, t.Error = wire.TaskFailed, "no attempt could start: see each attempt's error"
		}
		return nil
	})
	s.finishIfDone(ctx, name)
}

// preparedBase is the prepared base's /workspace, made while the attempts' sandboxes
// are: an archive on the host once ready is closed.
type preparedBase struct {
	ready   chan struct{}
	archive string
	err     error
}

// errSetupFailed is an attempt's error when the setup failed.
var errSetupFailed = errors.New("the setup failed: see the task's error")

// wait waits for the prepared base and returns its archive ("" for no base).
func (b *preparedBase) wait(ctx context.Context) (string, error) {
	if b == nil {
		return "", nil
	}
	select {
	case <-b.ready:
		return b.archive, b.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// started counts the attempts that did not fail to start.
func started(t *wire.Task) int {
	n := 0
	for _, a := range t.Attempts {
		if a.State != wire.AttemptFailed && a.State != wire.AttemptStarting {
			n++
		}
	}
	return n
}

// missingSandbox says whether one of the attempts has no sandbox yet.
func (s *Service) missingSandbox(ctx context.Context, as []wire.Attempt) bool {
	for _, a := range as {
		if _, err := s.opts.Store.GetSandbox(ctx, a.Sandbox); err != nil {
			return true
		}
	}
	return false
}

// fail records a task that could not be prepared, and why, with its attempts not yet
// started (each saying why in a word).
func (s *Service) fail(ctx context.Context, name, why, attemptWhy string) {
	if ctx.Err() != nil {
		return // the daemon stops: its restart prepares again
	}
	s.update(ctx, name, func(t *wire.Task) error {
		t.State, t.Error = wire.TaskFailed, why
		for i := range t.Attempts {
			if t.Attempts[i].State == wire.AttemptStarting {
				t.Attempts[i].State, t.Attempts[i].Error = wire.AttemptFailed, attemptWhy
			}
		}
		return nil
	})
}

// seedSource is what a task's sandboxes are made from: the host repository's checkout,
// and one bundle of it on the host, written once for them all.
type seedSource struct {
	src    gitsrc.Source
	bundle string
}

// newSeedSource reads the repository and writes its bundle.
func newSeedSource(ctx context.Context, repo string) (*seedSource, error) {
	src, err := gitsrc.Describe(ctx, repo)
	if err != nil {
		return nil, err
	}
	r, wait, err := gitsrc.Bundle(ctx, repo)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "paddock-task-*.bundle")
	if err != nil {
		r.Close()
		wait()
		return nil, err
	}
	_, err = io.Copy(f, r)
	r.Close()
	if werr := wait(); err == nil {
		err = werr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return &seedSource{src: src, bundle: f.Name()}, nil
}

func (ss *seedSource) remove() { os.Remove(ss.bundle) }

// createSandbox makes a sandbox of the task's repository at its base commit, detached,
// from the bundle of the host repository; seeded runs once /workspace holds it.
func (s *Service) createSandbox(ctx context.Context, t wire.Task, seed *seedSource, name, backendName, agent string, seeded func(context.Context, *guestclient.Client) error) error {
	if seed == nil {
		return fmt.Errorf("sandbox %s is gone: start the task again", name)
	}
	bundle, err := os.Open(seed.bundle)
	if err != nil {
		return err
	}
	defer bundle.Close()
	req := sandbox.CreateRequest{SandboxCreateRequest: wire.SandboxCreateRequest{Name: name, Backend: backendName,
		SourcePath: t.Repo, Origin: seed.src.Origin, Commit: t.Base, GitName: seed.src.GitName, GitEmail: seed.src.GitEmail}}
	if agent != "" {
		req.Agents = []string{agent}
	}
	if seeded != nil {
		req.Seeded = func(ctx context.Context, _ store.Sandbox, c *guestclient.Client, _ sandbox.Progress) error {
			return seeded(ctx, c)
		}
	}
	_, err = s.opts.Sandboxes.Create(ctx, req, bundle, nil)
	return err
}

// removeSandbox removes a sandbox of the task's own making (its prepared base, a
// half-made attempt's) with no final snapshot; one already gone is fine.
func (s *Service) removeSandbox(ctx context.Context, name string) {
	err := s.opts.Sandboxes.Remove(context.WithoutCancel(ctx), name, sandbox.RemoveOptions{Force: true, Purge: true}, nil, nil)
	if err != nil && apperr.KindOf(err) != apperr.KindNotFound {
		s.log.Warn("remove a task's sandbox", "sandbox", name, "err", err)
	}
}

// prepareBase makes the task's base sandbox, runs the setup there once, and keeps its
// /workspace as an archive on the host (returned), which every attempt's sandbox is
// given; the base is removed.
func (s *Service) prepareBase(ctx context.Context, t wire.Task, seed *seedSource) (string, error) {
	name := baseSandbox(t.Name)
	s.removeSandbox(ctx, name) // one a restart cut short
	if err := s.createSandbox(ctx, t, seed, name, t.Attempts[0].Backend, "", nil); err != nil {
		return "", fmt.Errorf("make the prepared base %s: %w", name, err)
	}
	defer s.removeSandbox(ctx, name)
	c, err := s.opts.Sandboxes.Client(ctx, name)
	if err != nil {
		return "", err
	}
	out := &tailbuf.Buffer{Max: setupOutputKept}
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", t.Setup}, Dir: inside.Workspace, Stdout: out, Stderr: out})
	if err != nil {
		return "", fmt.Errorf("run the setup in %s: %w", name, err)
	}
	if code != 0 {
		return "", fmt.Errorf("the setup %q failed (exit %d): %s", t.Setup, code, strings.TrimSpace(out.String()))
	}
	if err := runScript(ctx, c, baseScript); err != nil {
		return "", fmt.Errorf("the prepared base %s: %w", name, err)
	}
	f, err := os.CreateTemp("", "paddock-task-base-*.tar")
	if err != nil {
		return "", err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(c.TarOut(ctx, "/", inside.Workspace, pw)) }()
	err = archive.Subtree(f, pr, "workspace")
	pr.Close()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("copy the prepared base's /workspace: %w", err)
	}
	return f.Name(), nil
}

// baseScript readies the prepared base's /workspace for its copies: the files the setup
// made that git would see (a dependency directory not ignored) are ignored in every
// attempt (.git/info/exclude), as what the setup made is not the attempt's work, nor in
// its diff; and the base's own .mcp.json, which holds the credentials of its own tunnel
// and not the attempts', is left out.
const baseScript = `set -e
rm -f .mcp.json
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
git ls-files --others --exclude-standard --directory | sed 's/[][*?\\!#]/\\&/g; s/ $/\\ /; s/^/\//' >> "$exclude"
`

// fillScript empties /workspace but for the sandbox's own .mcp.json, for the prepared
// base's copy.
const fillScript = `cd /workspace && find . -mindepth 1 -maxdepth 1 ! -name .mcp.json -exec rm -rf -- {} +`

// branchScript puts the attempt's branch ($1) at the task's base ($2), checked out: made
// once, and left as it is when there (a restart).
const branchScript = `set -e
cd /workspace
if git rev-parse -q --verify "refs/heads/$1" >/dev/null; then
  git checkout -q "$1"
else
  git checkout -q -b "$1" "$2"
fi`

// startAttempt makes an attempt's sandbox (from the prepared base's archive, when there
// is one) and its agent's session with the prompt, and records the attempt working; or
// failed, saying why.
func (s *Service) startAttempt(ctx context.Context, t wire.Task, a wire.Attempt, seed *seedSource, base *preparedBase) {
	err := s.startAttemptErr(ctx, t, a, seed, base)
	if ctx.Err() != nil {
		return // the daemon stops: its restart starts it
	}
	if _, gerr := s.opts.Store.GetTask(ctx, t.Name); errors.Is(gerr, store.ErrNoTask) {
		s.removeSandbox(ctx, a.Sandbox) // the task was removed meanwhile
		return
	}
	s.updateAttempt(ctx, t.Name, a.N, func(_ *wire.Task, at *wire.Attempt) error {
		if at.State != wire.AttemptStarting {
			return nil
		}
		if err != nil {
			at.State, at.Error = wire.AttemptFailed, err.Error()
			return nil
		}
		at.State, at.Started = wire.AttemptWorking, s.opts.Now()
		return nil
	})
	if err != nil {
		s.emit(ctx, a.Sandbox, EventAttemptFailed, fmt.Sprintf("attempt %d of task %s (%s) could not start: %v", a.N, t.Name, a.Agent, err),
			map[string]string{"task": t.Name, "attempt": fmt.Sprint(a.N)})
		return
	}
	// An agent whose turn ended before the attempt was recorded working (a quick
	// command) has its checks run now.
	s.checkIfTurnEnded(ctx, t.Name, a.N)
}

func (s *Service) startAttemptErr(ctx context.Context, t wire.Task, a wire.Attempt, seed *seedSource, base *preparedBase) error {
	if _, err := s.opts.Store.GetSandbox(ctx, a.Sandbox); err != nil {
		seeded := func(ctx context.Context, c *guestclient.Client) error {
			archive, err := base.wait(ctx)
			if err != nil {
				return errSetupFailed
			}
			if archive != "" {
				if err := copyBase(ctx, c, archive); err != nil {
					return err
				}
			}
			return runScript(ctx, c, branchScript, a.Branch, t.Base)
		}
		if err := s.createSandbox(ctx, t, seed, a.Sandbox, a.Backend, a.Agent, seeded); err != nil {
			return err
		}
	} else if c, err := s.opts.Sandboxes.Client(ctx, a.Sandbox); err != nil {
		return err
	} else if err := runScript(ctx, c, branchScript, a.Branch, t.Base); err != nil {
		return err
	}
	sb, err := s.opts.Store.GetSandbox(ctx, a.Sandbox)
	if err != nil {
		return err
	}
	if _, err := s.opts.Store.GetSession(ctx, sb.ID, a.Session); err == nil {
		// Made before a restart, which may have cut it short before its prompt was sent:
		// one that is done (a command that ran) counts as started; any other is started
		// again, its prompt sent anew.
		if s.sessionExited(ctx, a) {
			return nil
		}
		if err := s.opts.Sessions.Remove(ctx, a.Sandbox, a.Session); err != nil {
			return fmt.Errorf("start %s again: %w", a.Session, err)
		}
	}
	req := session.CreateRequest{Name: a.Session, Agent: a.Agent, Prompt: t.Prompt, Disposable: true}
	if a.Agent == "shell" {
		// Any command: the prompt is its command line.
		req = session.CreateRequest{Name: a.Session, Agent: a.Agent, Command: t.Prompt}
	}
	_, err = s.opts.Sessions.Create(ctx, a.Sandbox, req)
	return err
}

// sessionExited says whether an attempt's session has exited.
func (s *Service) sessionExited(ctx context.Context, a wire.Attempt) bool {
	infos, err := s.opts.Sessions.List(ctx, a.Sandbox)
	if err != nil {
		return false
	}
	for _, in := range infos {
		if in.Name == a.Session {
			return in.Status == "exited"
		}
	}
	return false
}

// copyBase puts the prepared base's /workspace (the archive) in place of the sandbox's.
func copyBase(ctx context.Context, c *guestclient.Client, archive string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := runScript(ctx, c, fillScript); err != nil {
		return err
	}
	if _, _, err := c.TarIn(ctx, inside.Workspace, ".", f); err != nil {
		return fmt.Errorf("copy the prepared base in: %w", err)
	}
	return nil
}

// runScript runs a shell script in the sandbox with args as $1...; a failure says what
// it wrote.
func runScript(ctx context.Context, c *guestclient.Client, script string, args ...string) error {
	out := &tailbuf.Buffer{Max: setupOutputKept}
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: append([]string{"sh", "-c", script, "sh"}, args...), Dir: inside.Workspace, Stdout: out, Stderr: out})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("exit %d: %s", code, strings.TrimSpace(out.String()))
	}
	return nil
}
