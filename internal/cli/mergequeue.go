package cli

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// runMergeQueue puts a sandbox's branch through the daemon's merge queue (merge --queue).
func runMergeQueue(ctx context.Context, f *Factory, opts *mergeOptions) error {
	switch {
	case opts.check:
		return usagef("--check and --queue do not go together: --check says what a merge would bring, now")
	case opts.wip:
		return usagef("--wip and --queue do not go together: the queue lands the uncommitted work too, committed in the sandbox first")
	case opts.expect != "":
		return usagef("--commit and --queue do not go together")
	}
	for _, r := range opts.runs {
		if strings.TrimSpace(r) == "" {
			return usagef("--run takes a command")
		}
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	req := wire.SandboxLandRequest{Branch: opts.branch, Into: opts.into, Checks: opts.runs, Yes: opts.yes}
	return putInQueue(ctx, f, c, opts.json, opts.wait, func(yes bool) (wire.QueueEntry, error) {
		req.Yes = req.Yes || yes
		return c.LandSandbox(ctx, opts.name, req)
	})
}

// notBeingLanded refuses a merge into a branch of a repository while the merge queue
// lands an entry there, so that the two never move the branch at once. A daemon that
// keeps no queue (or cannot say) refuses nothing.
func notBeingLanded(ctx context.Context, c *client.Client, repo, into string) error {
	es, err := c.Queue(ctx, "")
	if err != nil {
		return nil
	}
	repo = filepath.Clean(repo)
	for _, e := range es {
		if !e.Open() || e.Mode == wire.QueuePullRequest || e.State == wire.QueueConflict ||
			e.Into != into || filepath.Clean(e.Repo) != repo {
			continue
		}
		return apperr.Conflict("wait for it to end (paddock task queue), or land through the queue too: paddock merge SANDBOX --queue",
			"the merge queue is landing %s on %s (entry %d, %s): not merged", entryWho(e), into, e.ID, e.State)
	}
	return nil
}
