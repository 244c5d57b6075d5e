package cli

import (
	"context"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/synccmd"
)

// hostRepo returns a git runner for the sandbox's host repository, checking that it is
// still where the sandbox was made from; the runner finds git-remote-paddock, for a push.
func hostRepo(ctx context.Context, f *Factory, info wire.SandboxInfo) (*gitsync.Git, error) {
	g, err := synccmd.HostRepo(ctx, syncSandbox(info), f.remote)
	if err != nil {
		return nil, err
	}
	if g.HelperDir, err = helperDir(f); err != nil {
		return nil, err
	}
	if p, err := f.Paths(); err == nil && p.Home != "" {
		g.Env = append(g.Env, "PADDOCK_HOME="+p.Home)
	}
	if f.remote != "" {
		g.Env = append(g.Env, "PADDOCK_CONTEXT="+f.remote) // the helper git runs talks to the same daemon
	}
	return g, nil
}

// syncSandbox is what a sync reads of a sandbox's record.
func syncSandbox(info wire.SandboxInfo) synccmd.Sandbox {
	return synccmd.Sandbox{Name: info.Name, SourcePath: info.SourcePath, BaseCommit: info.BaseCommit}
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

// fetchWork records the sandbox's uncommitted work and fetches everything into the host
// repository's refs/paddock/SANDBOX/*, for a reader that is not a sync: the next sync
// still reports what it brought.
func fetchWork(ctx context.Context, f *Factory, c *client.Client, name string) (wire.SandboxInfo, *gitsync.Git, gitsync.Result, error) {
	info, err := c.Get(ctx, name)
	if err != nil {
		return info, nil, gitsync.Result{}, err
	}
	g, err := hostRepo(ctx, f, info)
	if err != nil {
		return info, nil, gitsync.Result{}, err
	}
	res, err := synccmd.Fetch(ctx, c.Client, g, syncSandbox(info), false, f.IO.ErrOut)
	return info, g, res, err
}
