// Package synccmd is `paddock sync`'s fetch of a sandbox's work: the work fetched into
// the host repository (gitsync), recorded with the daemon and described to the user. It
// links only the API's wire client and gitsync, so that the lean front serves the plain
// `paddock sync NAME` itself: a sync is mostly process starts (the exec, git's), and the
// full program's start alone was several times a local `git fetch`. The full program
// uses the same code for sync and for the commands built on it (diff, push, env).
package synccmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/shell"
	"github.com/paddockhq/paddock/internal/termtext"
)

// Sandbox is what a sync needs of a sandbox's record: the fields of sandbox.Info it reads,
// by the same names on the wire.
type Sandbox struct {
	Name       string `json:"name"`
	SourcePath string `json:"source_path,omitempty"`
	BaseCommit string `json:"base_commit,omitempty"`
}

// Get reads a sandbox's record from the daemon.
func Get(ctx context.Context, c *wire.Client, name string) (Sandbox, error) {
	var sb Sandbox
	err := c.Do(ctx, http.MethodGet, wire.SandboxPath(name), nil, &sb)
	return sb, err
}

// HostRepo returns a git runner for the sandbox's host repository, checking that it is
// still where the sandbox was made from. remote names the context when the daemon is
// another machine's ("" for this machine's): the repository is then the clone the
// command runs in, which must hold the commit the sandbox started from.
func HostRepo(ctx context.Context, sb Sandbox, remote string) (*gitsync.Git, error) {
	if remote != "" {
		wd, _ := os.Getwd()
		top, err := (&gitsync.Git{Repo: wd}).Run(ctx, "rev-parse", "--show-toplevel")
		top = strings.TrimSuffix(top, "\n")
		if err != nil || top == "" {
			return nil, apperr.Invalid("run it in your clone of the project", "sandbox %q is on context %s: sync fetches into the repository you run it in, and %s is in none", sb.Name, remote, wd)
		}
		if _, err := (&gitsync.Git{Repo: top}).Run(ctx, "cat-file", "-e", sb.BaseCommit+"^{commit}"); err != nil {
			return nil, apperr.Invalid("run it in a clone of the project the sandbox was made from (git fetch first if it is behind)",
				"the repository %s does not have commit %s, which sandbox %q started from", top, gitsync.Short(sb.BaseCommit), sb.Name)
		}
		return &gitsync.Git{Repo: top}, nil
	}
	if sb.SourcePath == "" {
		return nil, apperr.Invalid("", "sandbox %q was not made from a host repository", sb.Name)
	}
	// The top of a repository holds .git (a directory, or a file in a worktree): one
	// stat, where asking git costs a process on every sync.
	if _, err := os.Stat(filepath.Join(sb.SourcePath, ".git")); err != nil {
		return nil, apperr.NotFound("move it back, or make a new sandbox from where it is now",
			"the host repository of sandbox %q, %s, has moved or was deleted", sb.Name, sb.SourcePath)
	}
	return &gitsync.Git{Repo: sb.SourcePath}, nil
}

// Stream runs commands in a sandbox's /workspace through the daemon's API.
func Stream(c *wire.Client, name string) gitsync.Stream {
	return func(ctx context.Context, argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
		return c.Exec(ctx, name, wire.ExecRequest{Argv: argv, Env: env, Dir: inside.Workspace},
			wire.ExecIO{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	}
}

// Fetch records the sandbox's uncommitted work and fetches everything into the host
// repository's refs/paddock/SANDBOX/*. Untracked files the work leaves out for their
// size are named on errOut, each with the command that copies it, and so is a wait for
// another sync of the sandbox to end. A sync reports (the Result says what is new since
// the last sync, which this one becomes); any other reader (diff) does not, and leaves
// the news of what it fetched to the next sync.
func Fetch(ctx context.Context, c *wire.Client, g *gitsync.Git, sb Sandbox, report bool, errOut io.Writer) (gitsync.Result, error) {
	g.Notes = errOut // a wait for another sync of the sandbox is said
	fetch := g.Fetch
	if report {
		fetch = g.Sync
	}
	res, err := fetch(ctx, sb.Name, sb.BaseCommit, inside.Workspace, Stream(c, sb.Name))
	for _, p := range res.LeftOut {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, inside.Workspace), "/")
		fmt.Fprintf(errOut, "paddock: left out of the uncommitted work: %s: over %s (a tracked file is kept as last committed); copy it with `paddock sync %s --files %s`\n",
			termtext.Escape(p), termtext.Size(gitsync.MaxWIPFileBytes), sb.Name, Word(rel))
	}
	var (
		clash  *gitsync.BranchClashError
		noRoom *gitsync.NoRoomError
	)
	switch {
	case errors.Is(err, gitsync.ErrNoCommits):
		err = apperr.Invalid("commit something in the sandbox first", "the repository in sandbox %q has no commits yet", sb.Name)
	case errors.As(err, &clash):
		err = apperr.Conflict("", "%v", err) // exit 4; a failure of git or the connection stays 1
	case errors.As(err, &noRoom):
		err = &apperr.Error{Kind: apperr.KindInternal, Message: err.Error(), Err: err,
			Hint: fmt.Sprintf("make room on the disk of %s, or take the large files out of the sandbox's commits (`paddock sync %s --files PATH` copies a file alone)", g.Repo, sb.Name)}
	}
	return res, err
}

// Run is `paddock sync` of a sandbox whose record was read: the fetch, its record with
// the daemon, and what arrived written to out (as JSON when asJSON), with how to look at
// it and merge it, and a warning of files that would run code on this machine, on
// errOut.
func Run(ctx context.Context, c *wire.Client, sb Sandbox, remote string, asJSON bool, out, errOut io.Writer) error {
	g, err := HostRepo(ctx, sb, remote)
	if err != nil {
		return err
	}
	res, err := Sync(ctx, c, g, sb, errOut)
	if err != nil {
		return err
	}
	hostCode := g.RunsOnHost(ctx, res, sb.BaseCommit)
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			gitsync.Result
			RunsOnHost []gitsync.HostCode `json:"runs_on_host"`
		}{res, append([]gitsync.HostCode{}, hostCode...)})
	}
	name := sb.Name
	if len(res.Updates) == 0 {
		fmt.Fprintf(errOut, "paddock: nothing new in %s\n", name)
		return nil
	}
	ns := gitsync.Namespace(name)
	for _, u := range res.Updates {
		what := "updated"
		if u.Old == "" {
			what = "new"
		}
		fmt.Fprintf(out, "%s (%s): %d commit(s), %d file(s)\n", termtext.Escape(u.Ref), what, len(u.Commits), len(u.Files))
		for _, c := range u.Commits {
			fmt.Fprintf(out, "  %s\n", c)
		}
		for _, file := range u.Files {
			fmt.Fprintf(out, "    %s\n", file)
		}
	}
	if len(hostCode) > 0 {
		fmt.Fprintf(errOut, "\npaddock: warning: the agent's work changes files that run code on this machine once merged; read them before merging:\n")
		for _, h := range hostCode {
			fmt.Fprintf(errOut, "  %s: %s (%s)\n", termtext.Escape(strings.TrimPrefix(h.Ref, ns)), termtext.Escape(h.Path), h.Why)
		}
	}
	fmt.Fprintf(errOut, "\nto look:   git log -p %s\n", Word(gitsync.Short(sb.BaseCommit)+".."+ns+gitsync.WIPBranch))
	for _, u := range res.Updates {
		branch := strings.TrimPrefix(u.Ref, ns)
		if branch == gitsync.WIPBranch || strings.HasPrefix(branch, gitsync.WIPBranch+"-") {
			continue
		}
		fmt.Fprintf(errOut, "to merge:  git merge %s\nor review: git switch -c %s %s\none step:  paddock merge %s %s   (syncs, says what comes in, asks first if it runs code here)\n",
			Word(u.Ref), Word("review-"+strings.ReplaceAll(branch, "/", "-")), Word(u.Ref), Word(name), Word(branch))
		break
	}
	return nil
}

// Sync is a sync of the sandbox into the repository of g: the fetch, which reports (see
// Fetch), and its record with the daemon (a failure to record is said on errOut).
func Sync(ctx context.Context, c *wire.Client, g *gitsync.Git, sb Sandbox, errOut io.Writer) (gitsync.Result, error) {
	res, err := Fetch(ctx, c, g, sb, true, errOut)
	if err != nil {
		return res, err
	}
	record, _ := json.Marshal(struct {
		gitsync.Result
		Mode string `json:"mode"`
	}{res, "manual"})
	if err := c.Do(ctx, http.MethodPost, wire.SandboxPath(sb.Name, "/syncs"), bytes.NewReader(record), nil); err != nil {
		fmt.Fprintf(errOut, "paddock: warning: the sync was not recorded: %v\n", err)
	}
	return res, nil
}

// Word is one word of a command the user is told to run, made safe to print and to
// paste: the sandbox names its branches, and a branch named "x;touch${IFS}/tmp/pwned"
// must stay one argument to git. It is quoted for the shell when it needs to be, then
// escaped, so a control character shows as \xNN inside the quotes.
func Word(s string) string { return termtext.Escape(shell.Word(s)) }
