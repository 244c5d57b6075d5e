// Package eventlog is the daemon's event log: each event of a sandbox is recorded in the
// state, kept in the sandbox's flight record when of a kind kept there, and published on
// the bus in the order of its seq. Every part of the daemon that reports an event (the
// sandbox service, sessions, snapshots, syncs, the meter) emits it here.
package eventlog

import (
	"context"
	"log/slog"
	"maps"
	"sync"

	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/flightrec"
	"github.com/paddockhq/paddock/internal/store"
)

// keep is how many events the daemon keeps; Prune deletes older ones.
const keep = 100_000

// Options configure a Log.
type Options struct {
	Store *store.Store
	// Bus is where every recorded event is published; nil makes one.
	Bus *events.Bus
	// Flight is the flight recorder that keeps each sandbox's record (nil: none kept).
	Flight *flightrec.Recorder
	Logger *slog.Logger
}

// Log records and publishes events. It is safe for concurrent use.
type Log struct {
	opts Options
	log  *slog.Logger
	bus  *events.Bus
	mu   sync.Mutex // orders recording and publishing (Emit)
}

// New returns the event log over opts.Store.
func New(opts Options) *Log {
	l := &Log{opts: opts, log: opts.Logger, bus: opts.Bus}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.bus == nil {
		l.bus = events.NewBus()
	}
	return l
}

// Bus is the daemon's event bus: every event, once recorded.
func (l *Log) Bus() *events.Bus { return l.bus }

// Emit records an event of sandbox sb and publishes it with its seq. Kind, Session,
// Detail and Attrs come from ev; the sandbox and time are filled in. An event that cannot
// be recorded is logged, and does not fail what it reports.
func (l *Log) Emit(ctx context.Context, sb store.Sandbox, ev events.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record(ctx, sb.Name, ev) // first: the record keeps what the store may refuse (a removed sandbox's last event)
	// Recording and publishing under one lock keeps the bus in seq order, which lets the
	// API's stream tell stored events from live ones by seq alone.
	rec, err := l.opts.Store.AddEvent(context.WithoutCancel(ctx), store.Event{SandboxID: sb.ID, Sandbox: sb.Name,
		Session: ev.Session, Kind: ev.Kind, Message: ev.Detail, Attrs: ev.Attrs, Time: ev.Time})
	if err != nil {
		l.log.Error("record an event", "sandbox", sb.Name, "kind", ev.Kind, "err", err)
		return
	}
	l.bus.Publish(FromStore(rec))
}

// Prune deletes all but the newest events, at the daemon's start.
func (l *Log) Prune(ctx context.Context) {
	if n, err := l.opts.Store.PruneEvents(ctx, keep); err != nil {
		l.log.Error("prune events", "err", err)
	} else if n > 0 {
		l.log.Info("pruned old events", "deleted", n)
	}
}

// FromStore is a recorded event as the bus and the API carry it.
func FromStore(e store.Event) events.Event {
	return events.Event{Seq: e.Seq, Time: e.Time, Sandbox: e.Sandbox, Session: e.Session, Kind: e.Kind, Detail: e.Message, Attrs: e.Attrs}
}

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

// record puts an event of a sandbox in its flight record, when it is of a kind kept
// there.
func (l *Log) record(ctx context.Context, sandbox string, ev events.Event) {
	kind, ok := flightKinds[ev.Kind]
	if !ok || l.opts.Flight == nil {
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
	l.opts.Flight.Add(sandbox, flightrec.Entry{Time: ev.Time, Kind: kind, Session: ev.Session, Who: flightrec.Who(ctx), Fields: f})
}
