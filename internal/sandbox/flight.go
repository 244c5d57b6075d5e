package sandbox

import (
	"context"
	"maps"
	"strconv"

	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/flightrec"
	"github.com/paddockhq/paddock/internal/proxy/egress"
)

// Flight is the daemon's flight recorder (nil when it keeps none): the API records
// there what it does in a sandbox for a client (exec, copies out).
func (s *Service) Flight() *flightrec.Recorder { return s.opts.Flight }

// flightKinds are the events that go into a sandbox's flight record, as what kind of
// entry; the others (a session's status, ports) are the sandbox's own say or noise.
var flightKinds = map[string]string{
	"usage":  flightrec.KindCredential,
	"synced": flightrec.KindSync, "sync-failed": flightrec.KindSync, "push": flightrec.KindSync,
	"merged":      flightrec.KindMerge,
	"run-started": flightrec.KindExec, "run-tool": flightrec.KindExec, "run-finished": flightrec.KindExec,
	"snapshot":        flightrec.KindSnapshot,
	"session-started": flightrec.KindSession, "session-exited": flightrec.KindSession,
	"session-restarted": flightrec.KindSession, "session-removed": flightrec.KindSession,
	"session-renamed": flightrec.KindSession,
	"created":         flightrec.KindSandbox, "started": flightrec.KindSandbox, "stopped": flightrec.KindSandbox,
	"removed": flightrec.KindSandbox, "suspended": flightrec.KindSandbox, "idle-stopped": flightrec.KindSandbox,
}

// recordEvent puts an event of a sandbox in its flight record, when it is of a kind
// kept there.
func (s *Service) recordEvent(ctx context.Context, sandbox string, ev events.Event) {
	kind, ok := flightKinds[ev.Kind]
	if !ok || s.opts.Flight == nil {
		return
	}
	f := maps.Clone(ev.Attrs)
	if f == nil {
		f = map[string]string{}
	}
	f["event"] = ev.Kind
	if ev.Detail != "" {
		f["detail"] = ev.Detail
	}
	s.opts.Flight.Add(sandbox, flightrec.Entry{Time: ev.Time, Kind: kind, Session: ev.Session, Who: flightrec.Who(ctx), Fields: f})
}

// recordRequest puts a request the egress proxy decided in the sandbox's flight record.
func (s *Service) recordRequest(r egress.Request) {
	if s.opts.Flight == nil {
		return
	}
	f := map[string]string{"method": r.Method, "host": r.Host, "port": strconv.Itoa(r.Port), "allowed": strconv.FormatBool(r.Allowed)}
	if r.Path != "" {
		f["path"] = r.Path
	}
	if r.Reason != "" {
		f["reason"] = r.Reason
	}
	if r.Repeat {
		f["repeat"] = "true"
	}
	s.opts.Flight.Add(r.Sandbox, flightrec.Entry{Time: r.Time, Kind: flightrec.KindNet, Fields: f})
}
