package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/inside"
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

// AutoSync runs until ctx is done, driven by the events the sandboxes' agents push: a
// branch that moves syncs an on-commit sandbox, and a session whose hook reports idle
// syncs an on-idle one, into its host repository. Events that come while a sandbox's sync
// runs lead to one more sync after it. Every sync is recorded, and reported as an event.
func (s *Service) AutoSync(ctx context.Context) {
	match := func(ev events.Event) bool {
		return ev.Kind == guestproto.EventBranchMoved ||
			(ev.Kind == guestproto.EventSessionStatus && ev.Attrs["status"] == "idle")
	}
	sub := s.bus.Subscribe(0, match)
	defer func() { sub.Close() }()
	workers := map[string]chan struct{}{} // by sandbox name: a pending sync
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.Dropped():
			// Fallen behind (a flood of events): what was missed only asked for syncs,
			// and the next event asks again.
			s.log.Warn("automatic syncs missed events")
			sub = s.bus.Subscribe(0, match)
			continue
		case ev, ok := <-sub.C():
			if !ok {
				continue
			}
			sb, err := s.opts.Store.GetSandbox(ctx, ev.Sandbox)
			if err != nil || sb.State != "running" || triggers[sb.SyncMode] != ev.Kind {
				continue
			}
			kick, ok := workers[sb.Name]
			if !ok {
				kick = make(chan struct{}, 1)
				workers[sb.Name] = kick
				go s.syncWorker(ctx, sb.Name, kick)
			}
			select {
			case kick <- struct{}{}:
			default: // one is pending already
			}
		}
	}
}

// triggers are the events that set off each automatic sync mode.
var triggers = map[string]string{
	SyncOnCommit: guestproto.EventBranchMoved,
	SyncOnIdle:   guestproto.EventSessionStatus,
}

// syncWorker runs the automatic syncs of one sandbox, one at a time, until ctx is done.
func (s *Service) syncWorker(ctx context.Context, name string, kick <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		sb, err := s.opts.Store.GetSandbox(ctx, name)
		if err != nil || triggers[sb.SyncMode] == "" {
			continue
		}
		c := s.live(sb.ID)
		if c == nil {
			continue
		}
		if err := s.syncNow(ctx, sb, c); err != nil {
			s.log.Warn("automatic sync", "sandbox", sb.Name, "mode", sb.SyncMode, "err", err)
			s.Emit(ctx, sb, events.Event{Kind: "sync-failed", Detail: sb.SyncMode + ": " + err.Error(),
				Attrs: map[string]string{"mode": sb.SyncMode, "error": err.Error()}})
		}
	}
}

// syncNow fetches a sandbox's work into its host repository and records what came.
func (s *Service) syncNow(ctx context.Context, sb store.Sandbox, c *guestclient.Client) error {
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
	return s.recordSync(ctx, sb, sb.SyncMode, len(res.Updates), string(data))
}

// RecordSync records what a sync run elsewhere (`paddock sync`) fetched: result is its
// JSON, with the number of refs it updated in "updates" if it says.
func (s *Service) RecordSync(ctx context.Context, name, result string) error {
	sb, err := s.record(ctx, name)
	if err != nil {
		return err
	}
	var r struct {
		Updates []json.RawMessage `json:"updates"`
		Mode    string            `json:"mode"`
	}
	json.Unmarshal([]byte(result), &r)
	if r.Mode == "" {
		r.Mode = SyncManual
	}
	return s.recordSync(ctx, sb, r.Mode, len(r.Updates), result)
}

func (s *Service) recordSync(ctx context.Context, sb store.Sandbox, mode string, refs int, result string) error {
	if err := s.opts.Store.AddSync(ctx, sb.ID, result); err != nil {
		return err
	}
	s.Emit(ctx, sb, events.Event{Kind: "synced", Detail: syncDetail(mode, refs),
		Attrs: map[string]string{"mode": mode, "refs": strconv.Itoa(refs)}})
	return nil
}

// agentExec runs commands in a sandbox through its guest connection.
func agentExec(c *guestclient.Client) gitsync.Exec {
	return func(ctx context.Context, argv, env []string) (string, string, int, error) {
		var stdout, stderr strings.Builder
		code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: argv, Env: env, Dir: inside.Workspace, Stdout: &stdout, Stderr: &stderr})
		return stdout.String(), stderr.String(), code, err
	}
}
