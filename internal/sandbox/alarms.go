package sandbox

import (
	"context"
	"strconv"

	"github.com/paddockhq/paddock/internal/alarm"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/store"
)

// EventAlarm is the kind of the event an alarm raises (docs/api.md).
const EventAlarm = "alarm"

// Raise records what a detector found an agent doing to its own controls in sandbox
// name (session "" when it is the sandbox's), emits an alarm event (which notify
// follows) and, with [alarms] stop, stops the sandbox. The same finding is raised once
// while it stands. It never fails what reported it: errors are logged.
func (s *Service) Raise(ctx context.Context, name, session string, f alarm.Finding) {
	ctx = context.WithoutCancel(ctx)
	sb, err := s.opts.Store.GetSandbox(ctx, name)
	if err != nil {
		s.log.Warn("raise an alarm of an unknown sandbox", "sandbox", name, "kind", f.Kind, "err", err)
		return
	}
	a, added, err := s.opts.Store.AddAlarm(ctx, store.Alarm{SandboxID: sb.ID, Sandbox: sb.Name, Session: session,
		Kind: f.Kind, Source: f.Source, Detail: f.Detail})
	if err != nil {
		s.log.Error("record an alarm", "sandbox", sb.Name, "err", err)
		return
	}
	if !added {
		return
	}
	s.log.Warn("alarm: the agent went for its own controls", "sandbox", sb.Name, "session", session, "kind", f.Kind, "source", f.Source)
	s.known.Forget(sb.ID) // ls shows the mark at once
	s.Emit(ctx, sb, events.Event{Kind: EventAlarm, Session: session, Detail: f.Detail,
		Attrs: map[string]string{"alarm": f.Kind, "source": f.Source, "id": strconv.FormatInt(a.ID, 10)}})
	if !s.opts.Alarms.Stop {
		return
	}
	if _, err := s.Stop(ctx, sb.Name); err != nil {
		s.log.Error("stop a sandbox on an alarm ([alarms] stop)", "sandbox", sb.Name, "err", err)
	}
}

// controlChanged raises an alarm for a control file the guest saw change (its event
// control-changed), when alarm.ControlFile says it is one. The path is the sandbox's
// text: compared, never opened on the host.
func (s *Service) controlChanged(sb store.Sandbox, attrs map[string]string) {
	p, change := attrs["path"], attrs["change"]
	if len(p) > maxAgentAttrLen {
		return
	}
	why := alarm.ControlFile(p)
	if why == "" {
		return
	}
	s.raiseSoon(sb.Name, "", alarm.ControlFinding(p, why, "files", change))
}

// raiseSoon is Raise on its own goroutine, for callers that must not block (the egress
// proxy's observers).
func (s *Service) raiseSoon(name, session string, f alarm.Finding) {
	go s.Raise(context.Background(), name, session, f)
}

// Alarms lists the alarms of sandbox name ("" for every sandbox ctx's viewer sees):
// the standing ones, and the cleared ones too when all is true.
func (s *Service) Alarms(ctx context.Context, name string, all bool) ([]alarm.Alarm, error) {
	id := ""
	seen := map[string]bool{}
	if name != "" {
		sb, err := s.record(ctx, name)
		if err != nil {
			return nil, err
		}
		id, seen[sb.ID] = sb.ID, true
	} else {
		rows, err := s.opts.Store.ListSandboxes(ctx)
		if err != nil {
			return nil, err
		}
		for _, sb := range rows {
			seen[sb.ID] = Sees(ctx, sb)
		}
	}
	rows, err := s.opts.Store.Alarms(ctx, id, all)
	if err != nil {
		return nil, err
	}
	out := []alarm.Alarm{}
	for _, r := range rows {
		if !seen[r.SandboxID] {
			continue // removed, or another user's
		}
		out = append(out, alarm.Alarm{ID: r.ID, Sandbox: r.Sandbox, Session: r.Session, Time: r.Time,
			AlarmFinding: alarm.Finding{Kind: r.Kind, Detail: r.Detail, Source: r.Source}, Cleared: r.Cleared})
	}
	return out, nil
}

// ClearAlarms acknowledges the standing alarms of sandbox name: all of them when id is
// 0, else alarm id. It returns how many it cleared; an id that names no standing alarm
// of the sandbox is not found.
func (s *Service) ClearAlarms(ctx context.Context, name string, id int64) (int64, error) {
	sb, err := s.record(ctx, name)
	if err != nil {
		return 0, err
	}
	n, err := s.opts.Store.ClearAlarms(ctx, sb.ID, id)
	if err != nil {
		return 0, err
	}
	if id != 0 && n == 0 {
		return 0, apperr.NotFound("run `paddock alarms "+sb.Name+"` to see its alarms", "sandbox %q has no standing alarm %d", sb.Name, id)
	}
	if n > 0 {
		s.known.Forget(sb.ID)
		s.Emit(ctx, sb, events.Event{Kind: "alarms-cleared", Detail: strconv.FormatInt(n, 10) + " alarm(s) cleared",
			Attrs: map[string]string{"count": strconv.FormatInt(n, 10)}})
	}
	return n, nil
}

// standingAlarms fills in each listed sandbox's count of standing alarms.
func (s *Service) standingAlarms(ctx context.Context, sbs []store.Sandbox, out []Info) {
	counts, err := s.opts.Store.StandingAlarms(ctx)
	if err != nil {
		s.log.Warn("count alarms", "err", err)
		return
	}
	for i, sb := range sbs {
		out[i].Alarms = counts[sb.ID]
	}
}
