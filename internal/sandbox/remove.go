package sandbox

import (
	"context"
	"fmt"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/events"
)

// RemoveOptions say how a sandbox is removed (Force: a running one too; Purge: without
// a final snapshot).
type RemoveOptions = wire.RemoveRequest

// Remove destroys a sandbox after a final snapshot, so that a restore can bring it
// back: every client's removal is this one, and none skips the snapshot by accident.
// final takes the snapshot (the snapshot service's; this one knows nothing of
// snapshots). A stopped or suspended sandbox is started for it; a running one needs
// opts.Force; a sandbox whose snapshot fails stays. opts.Purge takes none, and a
// sandbox its backend lost (or in any other state) is removed as it is: its earlier
// snapshots stay. progress hears each step.
func (s *Service) Remove(ctx context.Context, name string, opts RemoveOptions, final func(context.Context) error, progress func(string)) error {
	if progress == nil {
		progress = func(string) {}
	}
	force := opts.Force
	if !opts.Purge {
		info, err := s.Get(ctx, name)
		if err != nil {
			return err
		}
		switch info.State {
		case "running":
			if !force {
				return runningError(name)
			}
		case "stopped", "suspended":
			progress("starting " + name + " for its final snapshot")
			if _, err := s.Start(ctx, name); err != nil {
				return fmt.Errorf("start %s for its final snapshot (--purge removes it without one): %w", name, err)
			}
			force = true
		}
		switch info.State {
		case "running", "stopped", "suspended":
			if err := final(ctx); err != nil {
				return fmt.Errorf("the final snapshot of %s failed, so it stays (--purge removes it without one): %w", name, err)
			}
		}
	}
	return s.destroy(ctx, name, force)
}

// runningError refuses to remove a running sandbox without force.
func runningError(name string) error {
	return apperr.Conflict(fmt.Sprintf("stop it first (`paddock stop %s`) or remove it anyway with `paddock rm -f %s`", name, name),
		"sandbox %q is running", name)
}

// destroy removes the sandbox from its backend and the records, as it is. A running
// sandbox needs force.
func (s *Service) destroy(ctx context.Context, name string, force bool) error {
	sb, err := s.record(ctx, name)
	if err != nil {
		return err
	}
	defer s.lock(sb.ID)()
	b, err := s.backendOf(sb)
	if err != nil {
		return err
	}
	if st, err := b.State(ctx, backend.ID(sb.ID)); err == nil && st.State == backend.StateRunning && !force {
		return runningError(name)
	}
	s.dropClient(sb.ID)
	if err := b.Destroy(ctx, backend.ID(sb.ID)); err != nil {
		return fmt.Errorf("remove sandbox %q: %w", name, err)
	}
	if err := s.opts.Store.DeleteSandbox(ctx, sb.ID); err != nil {
		return err
	}
	s.Emit(ctx, sb, events.Event{Kind: "removed"})
	return nil
}
