package task

import (
	"context"
	"fmt"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/sandbox"
)

// Remove removes a task: its open merge queue entries dropped, each attempt's sandbox
// after a final snapshot (as `paddock rm` removes one; a sandbox already gone is fine),
// then the task. A snapshot that fails stops the removal there, and what is
// left stays, to be removed again. progress is told each step.
func (s *Service) Remove(ctx context.Context, name string, progress func(string)) error {
	if progress == nil {
		progress = func(string) {}
	}
	t, err := s.Get(ctx, name)
	if err != nil {
		return err
	}
	// The queue first, so that it does not work on an attempt whose sandbox goes.
	entries, err := s.opts.Store.QueueEntries(ctx, name)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Open() {
			progress(fmt.Sprintf("dropping merge queue entry %d (attempt %d into %s)", e.ID, e.Attempt, e.Into))
			// Drop stops the entry's worker, and waits for a branch being moved.
			if _, err := s.Drop(ctx, e.ID); err != nil && apperr.KindOf(err) != apperr.KindConflict {
				return err
			}
		}
	}
	s.removeSandbox(ctx, baseSandbox(name)) // a prepared base a restart left
	for _, a := range t.Attempts {
		if _, err := s.opts.Store.GetSandbox(ctx, a.Sandbox); err != nil {
			continue // never made, or removed already
		}
		progress(fmt.Sprintf("removing attempt %d's sandbox %s", a.N, a.Sandbox))
		opts := sandbox.RemoveOptions{Force: true}
		final := func(ctx context.Context) error { return s.opts.FinalSnapshot(ctx, a.Sandbox, progress) }
		if s.opts.FinalSnapshot == nil {
			progress("this daemon keeps no snapshots: " + a.Sandbox + " is removed without one")
			opts.Purge = true
		}
		if err := s.opts.Sandboxes.Remove(ctx, a.Sandbox, opts, final, progress); err != nil && apperr.KindOf(err) != apperr.KindNotFound {
			return fmt.Errorf("task %s: %w", name, err)
		}
	}
	progress("removing task " + name)
	return s.opts.Store.DeleteTask(ctx, name)
}
