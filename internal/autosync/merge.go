package autosync

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/store"
)

// The daemon's own sync and merge, on request (the web UI's Sync and Merge buttons): the
// daemon runs them in the sandbox's host repository, which it sees only when it is the
// local daemon of the machine the sandbox was made on (a sandbox made over TCP has no
// host repository here: its user syncs into their own clone with `paddock sync`). The
// merge is planned and run by gitsync, as `paddock merge` does.

// SyncAnswer is what the daemon's sync fetched, as `paddock sync --json` says it.
type SyncAnswer struct {
	gitsync.Result
	RunsOnHost []gitsync.HostCode `json:"runs_on_host"`
}

// MergeOptions is wire.MergeRequest.
type MergeOptions = wire.MergeRequest

// MergeAnswer is the daemon's merge: its plan, and whether it ran.
type MergeAnswer struct {
	gitsync.MergePlan
	// Merged says the host's branch moved, to New.
	Merged bool   `json:"merged"`
	New    string `json:"new,omitempty"`
	// NeedsYes says the merge waits for Yes: RunsOnHost names why.
	NeedsYes bool `json:"needs_yes,omitempty"`
}

// live is the host repository and guest connection a requested sync or merge needs.
func (s *Syncer) live(sb store.Sandbox) (*guestclient.Client, error) {
	if sb.SourcePath == "" {
		return nil, apperr.Invalid(fmt.Sprintf("run `paddock sync %s` (or merge) in your clone of the project", sb.Name),
			"sandbox %q has no host repository on the daemon's machine", sb.Name)
	}
	if _, err := os.Stat(filepath.Join(sb.SourcePath, ".git")); err != nil {
		return nil, apperr.NotFound("move it back, or make a new sandbox from where it is now",
			"the host repository of sandbox %q, %s, has moved or was deleted", sb.Name, sb.SourcePath)
	}
	c := s.opts.Sandboxes.Live(sb.ID)
	if c == nil {
		return nil, apperr.Conflict(fmt.Sprintf("start it: paddock start %s", sb.Name), "sandbox %q is not running", sb.Name)
	}
	return c, nil
}

// Sync syncs the sandbox named name into its host repository now, recorded as a manual
// sync (the web UI's Sync).
func (s *Syncer) Sync(ctx context.Context, name string) (SyncAnswer, error) {
	sb, err := s.opts.Sandboxes.Get(ctx, name)
	if err != nil {
		return SyncAnswer{}, err
	}
	c, err := s.live(sb)
	if err != nil {
		return SyncAnswer{}, err
	}
	res, err := s.syncNow(ctx, sb, c, Manual)
	if err != nil {
		return SyncAnswer{}, err
	}
	g := &gitsync.Git{Repo: sb.SourcePath}
	return SyncAnswer{Result: res, RunsOnHost: append([]gitsync.HostCode{}, g.RunsOnHost(ctx, res, sb.BaseCommit)...)}, nil
}

// Merge syncs the sandbox named name into its host repository, then merges its branch
// into the repository's current branch (gitsync.PlanMerge and Merge; the web UI's
// Merge): unless only checked, or the files that run code on the host once merged wait
// for opts.Yes. A merge is reported as a "merged" event.
func (s *Syncer) Merge(ctx context.Context, name string, opts MergeOptions) (MergeAnswer, error) {
	sb, err := s.opts.Sandboxes.Get(ctx, name)
	if err != nil {
		return MergeAnswer{}, err
	}
	c, err := s.live(sb)
	if err != nil {
		return MergeAnswer{}, err
	}
	current, err := gitsync.CurrentBranch(ctx, guestStream(c))
	if err != nil {
		return MergeAnswer{}, err
	}
	if _, err := s.syncNow(ctx, sb, c, Manual); err != nil {
		return MergeAnswer{}, err
	}
	g := &gitsync.Git{Repo: sb.SourcePath}
	plan, err := g.PlanMerge(ctx, gitsync.MergeRequest{Sandbox: sb.Name, Base: sb.BaseCommit, Branch: opts.Branch, Current: current, WIP: opts.WIP, Expect: opts.Commit})
	if err != nil {
		return MergeAnswer{}, err
	}
	a := MergeAnswer{MergePlan: plan}
	switch {
	case opts.Check || plan.UpToDate():
		return a, nil
	case len(plan.RunsOnHost) > 0 && !opts.Yes:
		a.NeedsYes = true
		return a, nil
	}
	done, err := g.Merge(ctx, plan, true)
	if err != nil {
		return a, err
	}
	a.Merged, a.New = true, done.New
	how := "merge commit"
	if plan.FastForward {
		how = "fast-forward"
	}
	s.opts.Sandboxes.Emit(ctx, sb, events.Event{Kind: "merged",
		Detail: fmt.Sprintf("%s into %s (%s, %d commit(s)); undo: git reset --hard %s", plan.Branch, plan.Into, how, len(plan.Commits), gitsync.Short(plan.Head)),
		Attrs:  map[string]string{"branch": plan.Branch, "into": plan.Into, "old": plan.Head, "new": done.New}})
	return a, nil
}
