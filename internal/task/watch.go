package task

import (
	"context"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestproto"
)

// sweepEvery is how often the attempts still working are looked at, in case the event
// of their turn's end was missed (a subscription that fell behind, a guest reconnecting).
const sweepEvery = 30 * time.Second

// turnEnd says whether an event is the end of a session's turn: its agent idle or
// waiting for an answer, or its process gone.
func turnEnd(ev events.Event) bool {
	return ev.Session != "" && (ev.Kind == guestproto.EventSessionExited ||
		ev.Kind == guestproto.EventSessionStatus && (ev.Attrs["status"] == "idle" || ev.Attrs["status"] == "waiting"))
}

// watch follows the event bus: an attempt's agent ending its turn, or a new commit on
// its branch, runs the checks. What happened while no subscription listened (before the
// first, or after one fell behind) is looked at once one listens, and every sweepEvery.
func (s *Service) watch(ctx context.Context) {
	if s.opts.Bus == nil {
		<-ctx.Done()
		return
	}
	s.work.Go(func() {
		tick := time.NewTicker(sweepEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s.sweep(ctx)
			}
		}
	})
	events.Watch(ctx, s.opts.Bus, func(ev events.Event) bool {
		return turnEnd(ev) || ev.Kind == guestproto.EventBranchMoved
	}, func() { s.sweep(ctx) }, func(ev events.Event) { s.handle(ctx, ev) })
}

// handle acts on one event of an attempt's sandbox.
func (s *Service) handle(ctx context.Context, ev events.Event) {
	t, n, ok := s.attemptBySandbox(ctx, ev.Sandbox)
	if !ok {
		return
	}
	a := attemptOf(&t, n)
	switch {
	case turnEnd(ev):
		// The event says to look; the session's status now says whether its turn is
		// over: an idle that comes late (the agent at its prompt before the prompt was
		// sent) is not the end of the turn under way.
		if ev.Session == a.Session && a.State == wire.AttemptWorking {
			s.work.Go(func() { s.checkIfTurnEnded(ctx, t.Name, n) }) // a sandbox slow to answer holds up no other
		}
	case ev.Kind == guestproto.EventBranchMoved:
		// A commit while the agent is not at work (a commit made by hand, or after its
		// turn's end) is checked; one during its turn is checked at the turn's end,
		// and the merge queue checks the rebases it makes itself.
		if a.State == wire.AttemptDone && ev.Attrs["to"] != "" && ev.Attrs["to"] != a.Head &&
			ev.Attrs["branch"] == a.Branch && t.State != wire.TaskLanding {
			s.requestChecks(ctx, t.Name, n)
		}
	}
}

// turnOver records the end of an attempt's agent's turn and runs its checks.
func (s *Service) turnOver(ctx context.Context, name string, n int) {
	_, err := s.updateAttempt(ctx, name, n, func(_ *wire.Task, a *wire.Attempt) error {
		if a.State != wire.AttemptWorking {
			return errSkip
		}
		a.State, a.Ended = wire.AttemptChecking, s.opts.Now()
		return nil
	})
	if err == nil {
		s.requestChecks(ctx, name, n)
	}
}

// checkIfTurnEnded looks at an attempt's session, and ends its turn when its agent is
// no longer at work: for a turn whose end came before the attempt was recorded working,
// or while nobody listened.
func (s *Service) checkIfTurnEnded(ctx context.Context, name string, n int) {
	t, err := s.Get(ctx, name)
	if err != nil {
		return
	}
	a := attemptOf(&t, n)
	if a == nil || a.State != wire.AttemptWorking {
		return
	}
	infos, err := s.opts.Sessions.List(ctx, a.Sandbox)
	if err != nil {
		return
	}
	for _, in := range infos {
		if in.Name == a.Session {
			switch in.Status {
			case "idle", "waiting", "exited":
				s.turnOver(ctx, name, n)
			}
			return
		}
	}
}

// sweep looks at every attempt still working.
func (s *Service) sweep(ctx context.Context) {
	ts, err := s.opts.Store.ListTasks(ctx)
	if err != nil {
		return
	}
	for _, t := range ts {
		for _, a := range t.Attempts {
			if a.State == wire.AttemptWorking {
				s.checkIfTurnEnded(ctx, t.Name, a.N)
			}
		}
	}
}

// resume takes up the work a restart cut short: tasks still preparing are prepared
// again from where they were, and attempts whose checks were under way are checked
// again; attempts still working are looked at by watch's first sweep; the judge's
// verdicts cut short are asked for again.
func (s *Service) resume(ctx context.Context) {
	ts, err := s.opts.Store.ListTasks(ctx)
	if err != nil {
		s.log.Error("resume the tasks", "err", err)
		return
	}
	for _, t := range ts {
		if t.State == wire.TaskPreparing {
			s.work.Go(func() { s.prepare(ctx, t.Name) })
			continue
		}
		for _, a := range t.Attempts {
			if a.State == wire.AttemptChecking {
				s.requestChecks(ctx, t.Name, a.N)
			}
		}
		// Every attempt checked, and the daemon stopped before it said so.
		s.finishIfDone(ctx, t.Name)
	}
	s.judgeLeft(ctx)
}
