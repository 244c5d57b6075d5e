package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/agentclient"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/store"
)

// Sync modes: how a sandbox's work reaches its host repository.
const (
	SyncManual   = "manual"    // paddock sync
	SyncOnCommit = "on-commit" // whenever a branch in the sandbox moves
	SyncOnIdle   = "on-idle"   // whenever a session's agent finishes a turn (its hook reports idle)
)

// SetSyncMode sets a sandbox's sync mode.
func (s *Service) SetSyncMode(ctx context.Context, name, mode string) (Info, error) {
	if mode != SyncManual && mode != SyncOnCommit && mode != SyncOnIdle {
		return Info{}, apperr.Invalid("use manual, on-commit or on-idle", "unknown sync mode %q", mode)
	}
	sb, err := s.record(ctx, name)
	if err != nil {
		return Info{}, err
	}
	if mode != SyncManual && sb.SourcePath == "" {
		return Info{}, apperr.Invalid("", "sandbox %q has no host repository to sync into", name)
	}
	sb.SyncMode = mode
	if err := s.opts.Store.UpdateSandbox(ctx, sb); err != nil {
		return Info{}, err
	}
	return s.info(ctx, sb), nil
}

// watchScripts print what an automatic sync mode watches: the branch heads, or the
// idle reports of the sessions' hooks.
var watchScripts = map[string]string{
	SyncOnCommit: `git -C /workspace for-each-ref --format='%(refname) %(objectname)' refs/heads`,
	SyncOnIdle:   `for f in /run/paddock/sessions/*.json; do [ -f "$f" ] && grep -q '"idle"' "$f" && printf '%s ' "$f" && cat "$f" && echo; done; true`,
}

// AutoSync runs until ctx is done. Every interval it looks at each running sandbox with
// an automatic sync mode, and syncs it into its host repository when what the mode
// watches has changed since it last looked. Every sync is recorded.
func (s *Service) AutoSync(ctx context.Context, interval time.Duration) {
	seen := map[string]string{} // sandbox ID + mode → last fingerprint
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rows, err := s.opts.Store.ListSandboxes(ctx)
		if err != nil {
			continue
		}
		for _, sb := range rows {
			script, ok := watchScripts[sb.SyncMode]
			if !ok || sb.State != "running" {
				continue
			}
			c := s.live(sb.ID)
			if c == nil {
				continue
			}
			out, _, code, err := agentExec(c)(ctx, []string{"sh", "-c", script}, nil)
			if err != nil || code != 0 {
				continue
			}
			key := sb.ID + " " + sb.SyncMode
			last, known := seen[key]
			seen[key] = out
			if !known || out == last || strings.TrimSpace(out) == "" {
				continue
			}
			if err := s.syncNow(ctx, sb, c); err != nil {
				s.log.Warn("automatic sync", "sandbox", sb.Name, "mode", sb.SyncMode, "err", err)
			}
		}
	}
}

// syncNow fetches a sandbox's work into its host repository and records what came.
func (s *Service) syncNow(ctx context.Context, sb store.Sandbox, c *agentclient.Client) error {
	if s.opts.HelperDir == "" {
		return fmt.Errorf("no git-remote-paddock helper")
	}
	if fi, err := os.Stat(sb.SourcePath + "/.git"); err != nil || fi == nil {
		return fmt.Errorf("the host repository %s has moved or was deleted", sb.SourcePath)
	}
	g := &gitsync.Git{Repo: sb.SourcePath, HelperDir: s.opts.HelperDir}
	if s.opts.Home != "" {
		g.Env = []string{"PADDOCK_HOME=" + s.opts.Home}
	}
	res, err := g.Sync(ctx, sb.Name, sb.BaseCommit, agentExec(c))
	if err != nil {
		return err
	}
	data, _ := json.Marshal(struct {
		gitsync.Result
		Mode string `json:"mode"`
	}{res, sb.SyncMode})
	s.log.Info("automatic sync", "sandbox", sb.Name, "mode", sb.SyncMode, "refs", len(res.Updates))
	return s.opts.Store.AddSync(ctx, sb.ID, string(data))
}

// agentExec runs commands in a sandbox through its agent connection.
func agentExec(c *agentclient.Client) gitsync.Exec {
	return func(ctx context.Context, argv, env []string) (string, string, int, error) {
		var stdout, stderr strings.Builder
		code, err := c.Exec(ctx, agentclient.ExecOptions{Argv: argv, Env: env, Dir: "/workspace", Stdout: &stdout, Stderr: &stderr})
		return stdout.String(), stderr.String(), code, err
	}
}
