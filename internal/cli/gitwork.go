package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddockhq/paddock/internal/api"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/sandbox"
)

// hostRepo returns a git runner for the sandbox's host repository, checking that it is
// still where the sandbox was made from.
func hostRepo(ctx context.Context, f *Factory, info sandbox.Info) (*gitsync.Git, error) {
	if info.SourcePath == "" {
		return nil, apperr.Invalid("", "sandbox %q was not made from a host repository", info.Name)
	}
	top, err := git(ctx, info.SourcePath, "rev-parse", "--show-toplevel")
	if err != nil || top != info.SourcePath {
		return nil, apperr.NotFound("move it back, or make a new sandbox from where it is now",
			"the host repository of sandbox %q, %s, has moved or was deleted", info.Name, info.SourcePath)
	}
	dir, err := helperDir(f)
	if err != nil {
		return nil, err
	}
	g := &gitsync.Git{Repo: top, HelperDir: dir}
	if p, err := f.Paths(); err == nil && p.Home != "" {
		g.Env = append(g.Env, "PADDOCK_HOME="+p.Home)
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
	dir := filepath.Join(p.Cache, "bin")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	link := filepath.Join(dir, RemoteHelperName)
	if cur, err := os.Readlink(link); err == nil && cur == exe {
		return dir, nil
	}
	tmp := link + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(exe, tmp); err != nil {
		return "", err
	}
	return dir, os.Rename(tmp, link)
}

// wipScript records the uncommitted work of /workspace and of every worktree.
const wipScript = `wip() { sh -c "$WIP" sh "$1"; }
cd /workspace && wip ` + gitsync.WIPBranch + ` >/dev/null || exit $?
git worktree list --porcelain | sed -n 's/^worktree //p' | while read -r dir; do
  case "$dir" in /workspace/.worktrees/*) (cd "$dir" && wip "` + gitsync.WIPBranch + `-${dir#/workspace/.worktrees/}" >/dev/null) ;; esac
done
git for-each-ref --format='%(refname:short)' refs/heads
`

// recordWIP makes the sandbox record its uncommitted work on its paddock-wip refs, and
// returns the sandbox's branches.
func recordWIP(ctx context.Context, c *api.Client, name string) ([]string, error) {
	var out, errOut strings.Builder
	code, err := c.Exec(ctx, name, api.ExecRequest{Argv: []string{"sh", "-c", wipScript}, Env: append([]string{"WIP=" + gitsync.WIPScript}, gitsync.SandboxGitEnv...)},
		api.ExecIO{Stdout: &out, Stderr: &errOut})
	if err != nil {
		return nil, err
	}
	switch code {
	case 0:
		return strings.Fields(out.String()), nil
	case 3:
		return nil, apperr.Invalid("commit something in the sandbox first", "the repository in sandbox %q has no commits yet", name)
	}
	return nil, fmt.Errorf("record the sandbox's uncommitted work: exit %d: %s", code, strings.TrimSpace(errOut.String()))
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
	branches, err := recordWIP(ctx, c, name)
	if err != nil {
		return info, nil, gitsync.Result{}, err
	}
	if err := gitsync.CheckBranches(name, branches); err != nil {
		return info, nil, gitsync.Result{}, apperr.Conflict("", "%v", err)
	}
	res, err := g.Fetch(ctx, name, info.BaseCommit)
	var ae *apperr.Error
	if err != nil && !errors.As(err, &ae) {
		err = apperr.Conflict("", "%v", err)
	}
	return info, g, res, err
}
