// Package autosync brings a sandbox's work into its host repository: by itself, driven by
// the events the sandboxes' guests push (a branch that moves, a session whose agent
// finishes a turn), and on record for the syncs the user runs (`paddock sync`).
package autosync

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/store"
)

// Sync modes: how a sandbox's work reaches its host repository.
const (
	Manual   = "manual"    // paddock sync
	OnCommit = "on-commit" // whenever a branch in the sandbox moves
	OnIdle   = "on-idle"   // whenever a session's agent finishes a turn (its hook reports idle)
)

// ValidMode reports whether mode is one of the sync modes.
func ValidMode(mode string) bool {
	return mode == Manual || mode == OnCommit || mode == OnIdle
}

// triggers are the events that set off each automatic sync mode.
var triggers = map[string]string{
	OnCommit: guestproto.EventBranchMoved,
	OnIdle:   guestproto.EventSessionStatus,
}

// Sandboxes is what a Syncer needs of the sandbox service.
type Sandboxes interface {
	// Get returns the record of the sandbox with this name as ctx's viewer sees it, or an
	// apperr not-found error that says what to run.
	Get(ctx context.Context, name string) (store.Sandbox, error)
	// Live returns the live guest connection of the sandbox with this ID, or nil when
	// there is none (the sandbox is stopped, or its connection died).
	Live(id string) *guestclient.Client
	// Emit records an event of a sandbox and publishes it.
	Emit(ctx context.Context, sb store.Sandbox, ev events.Event)
}

// Options configure a Syncer.
type Options struct {
	Store *store.Store
	// Bus carries the guests' events that set off automatic syncs.
	Bus       *events.Bus
	Sandboxes Sandboxes
	Logger    *slog.Logger
}

// Syncer runs the automatic syncs and records every sync.
type Syncer struct {
	opts Options
	log  *slog.Logger
}

// New constructs a Syncer.
func New(opts Options) *Syncer {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Syncer{opts: opts, log: log}
}

// Run runs until ctx is done, driven by the events the sandboxes' guests push: a branch
// that moves syncs an on-commit sandbox, and a session whose hook reports idle syncs an
// on-idle one, into its host repository. Events that come while a sandbox's sync runs
// lead to one more sync after it. Every sync is recorded, and reported as an event.
func (s *Syncer) Run(ctx context.Context) {
	match := func(ev events.Event) bool {
		return ev.Kind == guestproto.EventBranchMoved ||
			(ev.Kind == guestproto.EventSessionStatus && ev.Attrs["status"] == "idle")
	}
	sub := s.opts.Bus.Subscribe(0, match)
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
			sub = s.opts.Bus.Subscribe(0, match)
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
				go s.worker(ctx, sb.Name, kick)
			}
			select {
			case kick <- struct{}{}:
			default: // one is pending already
			}
		}
	}
}

// worker runs the automatic syncs of one sandbox, one at a time, until ctx is done.
func (s *Syncer) worker(ctx context.Context, name string, kick <-chan struct{}) {
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
		c := s.opts.Sandboxes.Live(sb.ID)
		if c == nil {
			continue
		}
		if _, err := s.syncNow(ctx, sb, c, sb.SyncMode); err != nil {
			s.log.Warn("automatic sync", "sandbox", sb.Name, "mode", sb.SyncMode, "err", err)
			s.opts.Sandboxes.Emit(ctx, sb, events.Event{Kind: "sync-failed", Detail: sb.SyncMode + ": " + err.Error(),
				Attrs: map[string]string{"mode": sb.SyncMode, "error": err.Error()}})
		}
	}
}

// syncNow fetches a sandbox's work into its host repository and records what came, as a
// sync of mode.
func (s *Syncer) syncNow(ctx context.Context, sb store.Sandbox, c *guestclient.Client, mode string) (gitsync.Result, error) {
	if fi, err := os.Stat(sb.SourcePath + "/.git"); err != nil || fi == nil {
		return gitsync.Result{}, fmt.Errorf("the host repository %s has moved or was deleted", sb.SourcePath)
	}
	g := &gitsync.Git{Repo: sb.SourcePath}
	res, err := g.Sync(ctx, sb.Name, sb.BaseCommit, inside.Workspace, guestStream(c))
	if err != nil {
		return res, err
	}
	data, _ := json.Marshal(struct {
		gitsync.Result
		Mode string `json:"mode"`
	}{res, mode})
	s.log.Info("sync", "sandbox", sb.Name, "mode", mode, "refs", len(res.Updates))
	return res, s.record(ctx, sb, mode, len(res.Updates), string(data))
}

// Record records what a sync run elsewhere (`paddock sync`) fetched into the host
// repository of the sandbox named name: result is its JSON, with the number of refs it
// updated in "updates" if it says, and its mode in "mode" (manual if it does not).
func (s *Syncer) Record(ctx context.Context, name, result string) error {
	sb, err := s.opts.Sandboxes.Get(ctx, name)
	if err != nil {
		return err
	}
	var r struct {
		Updates []json.RawMessage `json:"updates"`
		Mode    string            `json:"mode"`
	}
	json.Unmarshal([]byte(result), &r)
	if r.Mode == "" {
		r.Mode = Manual
	}
	return s.record(ctx, sb, r.Mode, len(r.Updates), result)
}

// record stores a sync's result and reports it as a "synced" event.
func (s *Syncer) record(ctx context.Context, sb store.Sandbox, mode string, refs int, result string) error {
	if err := s.opts.Store.AddSync(ctx, sb.ID, result); err != nil {
		return err
	}
	s.opts.Sandboxes.Emit(ctx, sb, events.Event{Kind: "synced", Detail: detail(mode, refs),
		Attrs: map[string]string{"mode": mode, "refs": strconv.Itoa(refs)}})
	return nil
}

// detail sums up a sync's result for its event.
func detail(mode string, refs int) string {
	switch refs {
	case 0:
		return mode + ": nothing new"
	case 1:
		return mode + ": 1 ref updated"
	}
	return fmt.Sprintf("%s: %d refs updated", mode, refs)
}

// guestStream runs commands in a sandbox's workspace through its guest connection.
func guestStream(c *guestclient.Client) gitsync.Stream {
	return func(ctx context.Context, argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
		return c.Exec(ctx, guestclient.ExecOptions{Argv: argv, Env: env, Dir: inside.Workspace, Stdin: stdin, Stdout: stdout, Stderr: stderr})
	}
}
