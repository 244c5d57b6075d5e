package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddockhq/paddock/internal/api"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/termtext"
)

// hostRepo returns a git runner for the sandbox's host repository, checking that it is
// still where the sandbox was made from.
func hostRepo(ctx context.Context, f *Factory, info sandbox.Info) (*gitsync.Git, error) {
	var top string
	if f.remote != "" {
		// The daemon is another machine's: the repository is this one's, the clone the
		// command runs in, which must hold the commit the sandbox started from.
		wd, _ := os.Getwd()
		t, err := git(ctx, wd, "rev-parse", "--show-toplevel")
		if err != nil {
			return nil, apperr.Invalid("run it in your clone of the project", "sandbox %q is on context %s: sync fetches into the repository you run it in, and %s is in none", info.Name, f.remote, wd)
		}
		if _, err := git(ctx, t, "cat-file", "-e", info.BaseCommit+"^{commit}"); err != nil {
			return nil, apperr.Invalid("run it in a clone of the project the sandbox was made from (git fetch first if it is behind)",
				"the repository %s does not have commit %s, which sandbox %q started from", t, short(info.BaseCommit), info.Name)
		}
		top = t
	} else {
		if info.SourcePath == "" {
			return nil, apperr.Invalid("", "sandbox %q was not made from a host repository", info.Name)
		}
		// The top of a repository holds .git (a directory, or a file in a worktree): one
		// stat, where asking git costs a process on every sync.
		if _, err := os.Stat(filepath.Join(info.SourcePath, ".git")); err != nil {
			return nil, apperr.NotFound("move it back, or make a new sandbox from where it is now",
				"the host repository of sandbox %q, %s, has moved or was deleted", info.Name, info.SourcePath)
		}
		top = info.SourcePath
	}
	dir, err := helperDir(f)
	if err != nil {
		return nil, err
	}
	g := &gitsync.Git{Repo: top, HelperDir: dir}
	if p, err := f.Paths(); err == nil && p.Home != "" {
		g.Env = append(g.Env, "PADDOCK_HOME="+p.Home)
	}
	if f.remote != "" {
		g.Env = append(g.Env, "PADDOCK_CONTEXT="+f.remote) // the helper git runs talks to the same daemon
	}
	return g, nil
}

// helperDir returns a directory holding git-remote-paddock, a link to this binary, for
// git to find when it fetches from paddock::SANDBOX.
func helperDir(f *Factory) (string, error) {
	p, err := f.Paths()
	if err != nil {
		return "", err
	}
	exe, err := f.Executable()
	if err != nil {
		return "", err
	}
	return gitsync.HelperDir(p.Cache, exe)
}

// sandboxStream runs commands in a sandbox's /workspace through the daemon's API.
func sandboxStream(c *api.Client, name string) gitsync.Stream {
	return func(ctx context.Context, argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
		return c.Exec(ctx, name, api.ExecRequest{Argv: argv, Env: env, Dir: inside.Workspace},
			api.ExecIO{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	}
}

// fetchWork records the sandbox's uncommitted work and fetches everything into the host
// repository's refs/paddock/SANDBOX/*.
func fetchWork(ctx context.Context, f *Factory, c *api.Client, name string) (sandbox.Info, *gitsync.Git, gitsync.Result, error) {
	info, err := c.Get(ctx, name)
	if err != nil {
		return info, nil, gitsync.Result{}, err
	}
	g, err := hostRepo(ctx, f, info)
	if err != nil {
		return info, nil, gitsync.Result{}, err
	}
	res, err := g.Sync(ctx, name, info.BaseCommit, inside.Workspace, sandboxStream(c, name))
	for _, p := range res.LeftOut {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, inside.Workspace), "/")
		fmt.Fprintf(f.IO.ErrOut, "paddock: left out of the uncommitted work: %s: untracked and over %s; copy it with `paddock sync %s --files %s`\n",
			termtext.Escape(p), termtext.Size(gitsync.MaxWIPFileBytes), name, suggestWord(rel))
	}
	var clash *gitsync.BranchClashError
	switch {
	case errors.Is(err, gitsync.ErrNoCommits):
		err = apperr.Invalid("commit something in the sandbox first", "the repository in sandbox %q has no commits yet", name)
	case errors.As(err, &clash):
		err = apperr.Conflict("", "%v", err) // exit 4; a failure of git or the connection stays 1
	}
	return info, g, res, err
}
