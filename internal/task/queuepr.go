package task

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
)

// workPR pushes an attempt's work and opens its pull request (once), then follows the
// pull request until it is merged or closed.
func (s *Service) workPR(ctx context.Context, e wire.QueueEntry) {
	if e.PR == nil {
		if err := s.openEntryPR(ctx, &e); err != nil {
			if errors.Is(err, errDropped) || ctx.Err() != nil {
				return
			}
			e.State, e.Detail = wire.QueueFailed, err.Error()
			if hint := apperr.HintOf(err); hint != "" {
				e.Detail += " (" + hint + ")"
			}
			s.log.Warn("merge queue: pull request failed", "task", e.Task, "attempt", e.Attempt, "entry", e.ID, "err", err)
			if s.put(ctx, &e) == nil {
				s.settle(ctx, e.Task)
			}
			return
		}
	}
	for e.Open() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.q().prPoll):
		}
		pr, err := s.followPR(ctx, e)
		if err != nil {
			s.log.Warn("merge queue: follow a pull request", "task", e.Task, "pr", e.PR.Number, "err", err)
			continue
		}
		if pr.State == "" || pr.State == e.PR.State {
			continue
		}
		e.PR.State = pr.State
		e.Detail = fmt.Sprintf("pull request #%d %s (%s)", e.PR.Number, pr.State, e.PR.URL)
		if err := s.put(ctx, &e); err != nil {
			return
		}
	}
}

// openEntryPR commits the attempt's work in its sandbox, fetches it and opens its pull
// request.
func (s *Service) openEntryPR(ctx context.Context, e *wire.QueueEntry) error {
	t, err := s.Get(ctx, e.Task)
	if err != nil {
		return err
	}
	a := attemptOf(&t, e.Attempt)
	if a == nil {
		return fmt.Errorf("task %s has no attempt %d", e.Task, e.Attempt)
	}
	g := hostGit(&t)
	c, err := s.opts.Sandboxes.Client(ctx, a.Sandbox)
	if err != nil {
		return apperr.Conflict(fmt.Sprintf("start it (paddock start %s), then land again", a.Sandbox), "the sandbox of attempt %d does not answer: %v", a.N, err)
	}
	r, err := rebaseInSandbox(ctx, g, c, &t, a, "")
	if err != nil {
		return err
	}
	refs, err := fetchWork(ctx, g, c, &t, a)
	if err != nil {
		return err
	}
	if got := refs[gitsync.Namespace(a.Sandbox)+a.Branch]; got != r.Head {
		return fmt.Errorf("the attempt's branch %s moved while it was pushed (now %s, was %s): land it again", a.Branch, gitsync.Short(got), gitsync.Short(r.Head))
	}
	e.Commit = r.Head
	if err := s.put(ctx, e); err != nil {
		return err
	}
	pr, err := s.openPR(ctx, *e, t, *a)
	if err != nil {
		return err
	}
	if pr.State == "" {
		pr.State = "open"
	}
	e.State, e.PR, e.Detail = wire.QueuePR, &pr, fmt.Sprintf("pull request #%d opened: %s", pr.Number, pr.URL)
	if err := s.put(ctx, e); err != nil {
		return err
	}
	s.landed(ctx, e, fmt.Sprintf("attempt %d of task %s: pull request #%d opened (%s)", e.Attempt, e.Task, pr.Number, pr.URL))
	return nil
}
