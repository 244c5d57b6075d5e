package cli

import (
	"bufio"
	"context"
	"fmt"
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
	e, err := c.LandSandbox(ctx, opts.name, req)
	if err != nil && needsYes(err) && !f.NonInteractive && !opts.json && isTerminal(f.IO.In) && isTerminal(f.IO.ErrOut) {
		// The daemon named the files that run code on this machine: on a terminal, the
		// user answers here, as the merge without the queue asks.
		fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n  %s\nLand anyway? [y/N] ", err, apperr.HintOf(err))
		answer, _ := bufio.NewReader(f.IO.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return apperr.Invalid("", "not landed")
		}
		req.Yes = true
		e, err = c.LandSandbox(ctx, opts.name, req)
	}
	if err != nil {
		return err
	}
	if opts.wait {
		if e, err = waitEntry(ctx, f, c, e); err != nil {
			return err
		}
	}
	if opts.json {
		if err := writeJSON(f, e); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", entryLine(e))
	}
	if !opts.wait {
		return nil
	}
	return exitOfEntry(e)
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
		return apperr.Conflict(fmt.Sprintf("wait for it to end (paddock task queue), or land through the queue too: paddock merge SANDBOX --queue"),
			"the merge queue is landing %s on %s (entry %d, %s): not merged", entryWho(e), into, e.ID, e.State)
	}
	return nil
}
