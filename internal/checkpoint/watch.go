package checkpoint

import (
	"context"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/store"
)

// turnEnd says whether an event is the end of a session's turn: its agent idle or
// waiting for an answer, or its process gone.
func turnEnd(ev events.Event) bool {
	return ev.Session != "" && (ev.Kind == guestproto.EventSessionExited ||
		ev.Kind == guestproto.EventSessionStatus && (ev.Attrs["status"] == "idle" || ev.Attrs["status"] == "waiting"))
}

// atWork says whether an event is a session's agent at work on a turn.
func atWork(ev events.Event) bool {
	return ev.Session != "" && ev.Kind == guestproto.EventSessionStatus && ev.Attrs["status"] == "working"
}

// watch takes a checkpoint at the end of each agent's turn: the files and the
// conversation, when either changed since the session's last checkpoint. A turn is one
// the agent was seen at work on (status working): an agent idle at its start, or one
// stopped and started again, ended none; an agent that says idle only at a turn's end
// (Codex) ends a turn at each idle. A turn under way while the daemon was down is not
// seen (its end takes no checkpoint); the next one is.
func (s *Service) watch(ctx context.Context) {
	if s.opts.Bus == nil {
		<-ctx.Done()
		return
	}
	events.Watch(ctx, s.opts.Bus, func(ev events.Event) bool { return turnEnd(ev) || atWork(ev) || ev.Kind == sessionRenamed }, nil,
		func(ev events.Event) {
			switch {
			case atWork(ev):
				s.setWorked(ev.Sandbox+"/"+ev.Session, true)
				return
			case ev.Kind == sessionRenamed:
				s.renamed(ctx, ev.Sandbox, ev.Attrs["from"], ev.Session)
				return
			}
			// A sandbox slow to answer holds up no other.
			idle := ev.Kind == guestproto.EventSessionStatus
			waiting := idle && ev.Attrs["status"] == "waiting"
			s.work.Go(func() { s.turnEnded(ctx, ev.Sandbox, ev.Session, idle, waiting) })
		})
}

// hush keeps the watch from taking checkpoints of a session's turns while something
// stops and starts its agent (a rewind): the agent's exit and its idle at its start
// again end no turn. The call it returns ends that; the session's next turn is the
// first it is seen at work on after.
func (s *Service) hush(sandboxName, sessionName string) func() {
	key := sandboxName + "/" + sessionName
	s.mu.Lock()
	if s.hushed == nil {
		s.hushed = map[string]int{}
	}
	s.hushed[key]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.hushed[key]--; s.hushed[key] <= 0 {
			delete(s.hushed, key)
		}
		delete(s.worked, key)
	}
}

func (s *Service) isHushed(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hushed[key] > 0
}

func (s *Service) setWorked(key string, v bool) (was bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.worked == nil {
		s.worked = map[string]bool{}
	}
	was = s.worked[key]
	if v {
		s.worked[key] = true
	} else {
		delete(s.worked, key)
	}
	return was
}

// turnEnded takes the checkpoint of the turn a session's agent just ended (idle: at its
// prompt or waiting, rather than exited). An agent waiting for an answer (a permission,
// a question) goes on with its work once answered, saying nothing at that moment: it
// stays at work, so that the end of what it does then is a turn too.
func (s *Service) turnEnded(ctx context.Context, sandboxName, sessionName string, idle, waiting bool) {
	sb, err := s.opts.Store.GetSandbox(ctx, sandboxName)
	if err != nil {
		return
	}
	key := sandboxName + "/" + sessionName
	if s.isHushed(key) {
		return // stopped and started again
	}
	worked := s.worksAgain(key)
	if !waiting {
		worked = s.setWorked(key, false)
	}
	if !worked && !(idle && s.idleEndsTurns(ctx, sb, sessionName)) {
		s.log.Info("an idle session ended no turn: its agent was not seen at work", "sandbox", sandboxName, "session", sessionName)
		return // an agent at its prompt after its start
	}
	if s.settle(ctx, sandboxName, sessionName); s.isHushed(key) {
		return // a rewind began meanwhile
	}
	cp, taken, err := s.take(ctx, sb, takeOpts{session: sessionName, kind: wire.CheckpointTurn, ifChanged: true})
	switch {
	case apperr.KindOf(err) == apperr.KindInvalid:
		s.log.Debug("no checkpoint at the end of a turn", "sandbox", sandboxName, "session", sessionName, "err", err)
	case err != nil:
		s.setWorked(key, true) // the next end of a turn tries again
		s.log.Warn("checkpoint at the end of a turn", "sandbox", sandboxName, "session", sessionName, "err", err)
	case taken:
		s.log.Info("checkpoint at the end of a turn", "sandbox", sandboxName, "session", sessionName, "seq", cp.Seq, "turn", cp.Turn)
	default:
		s.log.Info("no checkpoint at the end of a turn: nothing changed", "sandbox", sandboxName, "session", sessionName)
	}
}

// sessionRenamed is the event of a session's new name (Attrs from: the old one).
const sessionRenamed = "session-renamed"

// renamed carries what the watch knows of a renamed session (whether its agent was seen
// at work) over to its new name; its checkpoints' records were renamed with it (the
// store's RenameSession).
func (s *Service) renamed(_ context.Context, sandboxName, from, to string) {
	if from == "" || to == "" {
		return
	}
	if s.setWorked(sandboxName+"/"+from, false) {
		s.setWorked(sandboxName+"/"+to, true)
	}
}

// idleEndsTurns says whether the session's agent says it is idle only at the end of a
// turn (Codex: its notify program), never at its prompt after it starts, and nothing at
// a turn's start when the user types into its terminal: each idle is a turn's end.
func (s *Service) idleEndsTurns(ctx context.Context, sb store.Sandbox, sessionName string) bool {
	se, err := s.opts.Store.GetSession(ctx, sb.ID, sessionName)
	if err != nil {
		return false
	}
	a, err := agents.Get(se.Agent)
	return err == nil && a.Status.Idle && !a.Status.Ready
}
