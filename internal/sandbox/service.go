// Package sandbox is the service layer: it turns user requests (up, start, stop, rm,
// exec...) into backend calls, state records and guest calls, so that the API
// handlers stay thin. What a sandbox has beyond its lifecycle lives in packages of its
// own that the Service wires in: automatic syncs (autosync), the MCP files written into
// it (mcp), its egress rules and denials (netpolicy), image builds (imagebuild).
package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/alarm"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/events/eventlog"
	"github.com/paddockhq/paddock/internal/flightrec"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/lastread"
	"github.com/paddockhq/paddock/internal/netpolicy"
	"github.com/paddockhq/paddock/internal/proxy/creds"
	"github.com/paddockhq/paddock/internal/proxy/egress"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/termtext"
)

// Info is wire.SandboxInfo (the API's wire type).
type Info = wire.SandboxInfo

// SessionKeeper is what the session service does as a sandbox stops and starts: the
// sandbox service knows nothing of sessions itself (SetSessionKeeper).
type SessionKeeper interface {
	// Stopping records, as the sandbox stops, which of its sessions' processes run.
	Stopping(ctx context.Context, sb store.Sandbox)
	// Started resumes every session of the started sandbox but those whose process had
	// ended before it stopped, and names them; a session that cannot be resumed is
	// named in the error, and the others still are.
	Started(ctx context.Context, sb store.Sandbox) ([]string, error)
}

// SetSessionKeeper tells the service what to do with sessions as sandboxes stop and
// start.
func (s *Service) SetSessionKeeper(k SessionKeeper) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keeper = k
}

func (s *Service) sessionKeeper() SessionKeeper {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keeper
}

// Options configure a Service.
type Options struct {
	Store *store.Store
	// Backends are the constructed backends, by name.
	Backends map[string]backend.Backend
	// DefaultBackend is used when a request names none; empty picks the first available
	// in the order of Preference.
	DefaultBackend string
	Guest          GuestBinary
	Version        string
	Logger         *slog.Logger
	// Creds is the credential proxy every sandbox reaches through a tunnel.
	Creds *creds.Proxy
	// MCP are the MCP servers declared in the config.
	MCP map[string]config.MCPServer
	// ReposDir holds the daemon's own clones of git URLs (CreateRequest.Clone).
	ReposDir string
	// Events is the daemon's event log, where the service's events go; nil makes one
	// over Store and Flight.
	Events *eventlog.Log
	// Net is the sandboxes' egress policy (rules, denials, learn mode), which the
	// service's egress proxy decides by; nil makes one over Store and Events.
	Net *netpolicy.Rules
	// Flight is the flight recorder that keeps each sandbox's record (nil: none kept).
	Flight *flightrec.Recorder
	// Alarms says what an alarm does beyond being recorded ([alarms]).
	Alarms config.Alarms
}

// Preference is the order in which backends are tried when none is named or
// configured: those whose description gives them a place in it (Description.Default),
// by that place, leaving out any emulated here (a VM without KVM), which the user must
// name.
func Preference(backends map[string]backend.Backend) []string {
	var names []string
	for n, b := range backends {
		if d := b.Describe(); d.Default > 0 && !d.Emulated {
			names = append(names, n)
		}
	}
	backend.SortByDefault(names, func(n string) backend.Description { return backends[n].Describe() })
	return names
}

// Service manages sandboxes. It is safe for concurrent use; lifecycle operations on one
// sandbox are serialised.
type Service struct {
	opts Options
	log  *slog.Logger

	egress *egress.Proxy
	net    *netpolicy.Rules
	events *eventlog.Log

	mu      sync.Mutex
	closed  bool
	locks   map[string]*sync.Mutex // by sandbox ID
	clients map[string]*conn       // by sandbox ID
	// newest finds a sandbox's newest snapshot (SetSnapshots), for a sandbox its backend lost.
	newest func(ctx context.Context, name string) (id string, at time.Time, ok bool)
	keeper SessionKeeper
	// known is what listings last read of each sandbox's live state, by ID.
	known lastread.Cache[Info]
	// names watches the host names sandboxes ask the egress proxy for (alarms).
	names *alarm.Names
}

// SetSnapshots tells the service how to find a sandbox's newest snapshot, so that a
// sandbox its backend lost says which snapshot brings it back.
func (s *Service) SetSnapshots(newest func(ctx context.Context, name string) (id string, at time.Time, ok bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.newest = newest
}

// conn is a live guest connection, the network tunnels it carries, and the pump of its
// guest's events.
type conn struct {
	client     *guestclient.Client
	att        *attachment
	stopEvents context.CancelFunc
}

func (c *conn) close() {
	c.stopEvents()
	c.att.close()
	c.client.Close()
}

// New constructs a Service.
func New(opts Options) *Service {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{opts: opts, log: log, events: opts.Events, locks: map[string]*sync.Mutex{}, clients: map[string]*conn{}}
	if s.events == nil {
		s.events = eventlog.New(eventlog.Options{Store: opts.Store, Flight: opts.Flight, Logger: log})
	}
	s.net = opts.Net
	if s.net == nil {
		s.net = netpolicy.New(netpolicy.Options{Store: opts.Store, Sandboxes: Records{Store: opts.Store, Events: s.events}, Logger: log})
	}
	s.names = alarm.NewNames()
	s.egress = egress.New(egress.Options{Policy: s.net.Egress, OnDenial: s.net.RecordDenial, OnRequest: s.observeEgress,
		Logger: log})
	return s
}

// Close drops every guest connection, and writes the counts of egress denials it holds;
// sandboxes keep running (with no network until a daemon connects again).
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	for id, c := range s.clients {
		c.close()
		delete(s.clients, id)
	}
	s.mu.Unlock()
	if err := s.net.Flush(context.Background()); err != nil {
		s.log.Error("close", "err", err)
	}
}

func (s *Service) lock(id string) func() {
	s.mu.Lock()
	l, ok := s.locks[id]
	if !ok {
		l = &sync.Mutex{}
		s.locks[id] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func newID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// notFound is the error for an unknown sandbox name.
func notFound(name string) error {
	return apperr.NotFound("run `paddock ls` to see your sandboxes", "no sandbox named %q", name)
}

// record finds a sandbox by name, as ctx's viewer sees it: another user's is not found.
func (s *Service) record(ctx context.Context, name string) (store.Sandbox, error) {
	return Records{Store: s.opts.Store}.Get(ctx, name)
}

func (s *Service) backendOf(sb store.Sandbox) (backend.Backend, error) {
	b, ok := s.opts.Backends[sb.Backend]
	if !ok {
		return nil, apperr.Unavailable("run `paddock doctor`", "sandbox %q uses backend %q, which this daemon does not have", sb.Name, sb.Backend)
	}
	return b, nil
}

// PickBackend resolves a requested backend name (empty for the default) to a backend that
// is available here, or says why none is.
func (s *Service) PickBackend(ctx context.Context, name string) (backend.Backend, error) {
	if name == "" {
		name = s.opts.DefaultBackend
	}
	if name != "" {
		b, ok := s.opts.Backends[name]
		if !ok {
			return nil, apperr.Invalid("run `paddock doctor` to see the backends", "unknown backend %q", name)
		}
		if err := b.Available(ctx); err != nil {
			return nil, unavailable(err)
		}
		return b, nil
	}
	var reasons []error
	for _, n := range Preference(s.opts.Backends) {
		if b, ok := s.opts.Backends[n]; ok {
			err := b.Available(ctx)
			if err == nil {
				return b, nil
			}
			reasons = append(reasons, err)
		}
	}
	if len(reasons) == 1 {
		return nil, unavailable(reasons[0])
	}
	hint := "run `paddock doctor` for how to fix it"
	var ue *backend.UnavailableError
	if len(reasons) > 0 && errors.As(reasons[0], &ue) && ue.Fix != "" {
		// The preferred backend's fix first.
		hint = ue.Fix + " (`paddock doctor` says how to fix the others)"
	}
	return nil, apperr.Unavailable(hint, "no backend is available here: %v", errors.Join(reasons...))
}

func unavailable(err error) error {
	var ue *backend.UnavailableError
	if errors.As(err, &ue) {
		return apperr.Unavailable(ue.Fix, "%s", ue.Error())
	}
	return apperr.Unavailable("run `paddock doctor`", "%v", err)
}

// List returns every sandbox ctx's viewer sees, with its live state.
func (s *Service) List(ctx context.Context) ([]Info, error) {
	rows, err := s.opts.Store.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	var seen []store.Sandbox
	for _, sb := range rows {
		if Sees(ctx, sb) {
			seen = append(seen, sb)
		}
	}
	// A backend that lists all its sandboxes' states in one call (a container engine)
	// is asked once; any other backend's live state is a handful of small reads per
	// sandbox (files, /proc, cgroups): a few at once keep `ls` quick with hundreds.
	listed := s.listStates(ctx, seen)
	out := make([]Info, len(seen))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(listWorkers, len(seen)) {
		wg.Go(func() {
			for i := range work {
				out[i] = s.infoBounded(ctx, seen[i], listed[seen[i].Backend])
			}
		})
	}
	for i := range seen {
		work <- i
	}
	close(work)
	wg.Wait()
	s.standingAlarms(ctx, seen, out)
	return out, nil
}

// infoBounded is infoWith, waiting for the backend no longer than its last read of
// this sandbox earned (lastread.Cache): past that, the state as last read, marked Stale.
func (s *Service) infoBounded(ctx context.Context, sb store.Sandbox, listed map[backend.ID]backend.Status) Info {
	in, stale, _, err := s.known.Get(ctx, sb.ID, func(ctx context.Context) (Info, error) { return s.infoWith(ctx, sb, listed), nil })
	if err != nil {
		return s.infoWith(ctx, sb, listed)
	}
	in.Stale = stale
	return in
}

// listWorkers is how many sandboxes' states List reads at once.
const listWorkers = 8

// Get returns one sandbox with its live state.
func (s *Service) Get(ctx context.Context, name string) (Info, error) {
	sb, err := s.record(ctx, name)
	if err != nil {
		return Info{}, err
	}
	in := []Info{s.info(ctx, sb)}
	s.standingAlarms(ctx, []store.Sandbox{sb}, in)
	return in[0], nil
}

// listStates reads the states of the sandboxes of each backend that lists them in one
// call, by backend name; a backend that cannot is left out.
func (s *Service) listStates(ctx context.Context, sbs []store.Sandbox) map[string]map[backend.ID]backend.Status {
	out := map[string]map[backend.ID]backend.Status{}
	for _, sb := range sbs {
		if _, done := out[sb.Backend]; done {
			continue
		}
		out[sb.Backend] = nil
		b := s.opts.Backends[sb.Backend]
		l, ok := b.(backend.Lister)
		if !ok || !b.Describe().Lists {
			continue
		}
		states, err := l.States(ctx)
		if err != nil {
			s.log.Debug("list the sandboxes' states", "backend", sb.Backend, "err", err)
			continue
		}
		out[sb.Backend] = states
	}
	return out
}

// info combines the record with what the backend reports now.
func (s *Service) info(ctx context.Context, sb store.Sandbox) Info {
	return s.infoWith(ctx, sb, nil)
}

// infoWith is info with the states its backend listed, if it did.
func (s *Service) infoWith(ctx context.Context, sb store.Sandbox, listed map[backend.ID]backend.Status) Info {
	in := Info{Name: sb.Name, Backend: sb.Backend, State: sb.State, Detail: sb.Detail,
		SourcePath: sb.SourcePath, SourceURL: sb.SourceURL, BaseCommit: sb.BaseCommit, Network: sb.Network, SyncMode: sb.SyncMode, IdleStopSeconds: int64(sb.IdleStop / time.Second),
		Agents:  splitList(sb.Agents),
		Runtime: sb.Runtime, CreatedAt: sb.CreatedAt, Owner: s.ownerLogin(ctx, sb)}
	if sb.State == "creating" {
		return in
	}
	b, err := s.backendOf(sb)
	if err != nil {
		in.State, in.Detail = "error", err.Error()
		return in
	}
	// One the listing lacks is asked for alone: made since, or gone.
	st, ok := listed[backend.ID(sb.ID)]
	if !ok {
		if st, err = b.State(ctx, backend.ID(sb.ID)); err != nil {
			in.State, in.Detail = "error", err.Error()
			return in
		}
	}
	switch st.State {
	case backend.StateMissing:
		in.State, in.Detail = s.lost(ctx, sb.Name)
	case backend.StateCreated:
		in.State = "stopped"
	default:
		in.State = string(st.State)
		if st.Detail != "" {
			in.Detail = st.Detail
		}
	}
	if st.State == backend.StateRunning {
		in.Limits, in.LimitsNote = s.limits(ctx, b, backend.ID(sb.ID))
	}
	return in
}

// Start starts a stopped sandbox, or resumes a suspended one; starting a running one
// changes nothing.
func (s *Service) Start(ctx context.Context, name string) (Info, error) {
	sb, err := s.record(ctx, name)
	if err != nil {
		return Info{}, err
	}
	defer s.lock(sb.ID)()
	b, err := s.backendOf(sb)
	if err != nil {
		return Info{}, err
	}
	if err := b.Available(ctx); err != nil {
		return Info{}, unavailable(err)
	}
	s.dropClient(sb.ID)
	if err := b.Start(ctx, backend.ID(sb.ID)); err != nil {
		return Info{}, fmt.Errorf("start sandbox %q: %w", name, err)
	}
	sb.State, sb.Detail = "running", ""
	if err := s.opts.Store.UpdateSandbox(ctx, sb); err != nil {
		return Info{}, err
	}
	s.known.Forget(sb.ID)
	s.Emit(ctx, sb, events.Event{Kind: "started"})
	var resumed []string
	var rerr error
	if k := s.sessionKeeper(); k != nil {
		resumed, rerr = k.Started(ctx, sb)
	}
	in := s.info(ctx, sb)
	in.Resumed = resumed
	if rerr != nil {
		in.Detail = strings.TrimSpace(in.Detail + " " + rerr.Error())
	}
	return in, nil
}

// Stop stops a sandbox, keeping its workspace.
func (s *Service) Stop(ctx context.Context, name string) (Info, error) {
	sb, err := s.record(ctx, name)
	if err != nil {
		return Info{}, err
	}
	defer s.lock(sb.ID)()
	b, err := s.backendOf(sb)
	if err != nil {
		return Info{}, err
	}
	if k := s.sessionKeeper(); k != nil {
		k.Stopping(ctx, sb)
	}
	s.dropClient(sb.ID)
	if err := b.Stop(ctx, backend.ID(sb.ID)); err != nil {
		return Info{}, fmt.Errorf("stop sandbox %q: %w", name, err)
	}
	sb.State, sb.Detail = "stopped", ""
	if err := s.opts.Store.UpdateSandbox(ctx, sb); err != nil {
		return Info{}, err
	}
	s.known.Forget(sb.ID)
	s.Emit(ctx, sb, events.Event{Kind: "stopped"})
	return s.info(ctx, sb), nil
}

// Record returns a sandbox's stored record, or a not-found error that says what to run.
func (s *Service) Record(ctx context.Context, name string) (store.Sandbox, error) {
	return s.record(ctx, name)
}

// Store is the daemon's database, for the services built on this one.
func (s *Service) Store() *store.Store { return s.opts.Store }

// Client returns a connection to the sandbox's guest, dialling a new one when
// there is none or the last one died.
func (s *Service) Client(ctx context.Context, name string) (*guestclient.Client, error) {
	sb, err := s.record(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.client(ctx, sb)
}

func (s *Service) client(ctx context.Context, sb store.Sandbox) (*guestclient.Client, error) {
	if c := s.live(sb.ID); c != nil {
		return c, nil
	}
	defer s.lock("dial:" + sb.ID)() // one dial at a time per sandbox
	if c := s.live(sb.ID); c != nil {
		return c, nil
	}
	b, err := s.backendOf(sb)
	if err != nil {
		return nil, err
	}
	st, err := b.State(ctx, backend.ID(sb.ID))
	if err != nil {
		return nil, err
	}
	if st.State != backend.StateRunning {
		what := string(st.State)
		if st.State == backend.StateError && st.Detail != "" {
			what += ": " + st.Detail // why, and often what to do (a host whose key changed)
		}
		return nil, apperr.Conflict(fmt.Sprintf("start it with `paddock start %s`", sb.Name), "sandbox %q is not running (%s)", sb.Name, what)
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	client, err := guestclient.New(dctx, func(ctx context.Context) (net.Conn, error) {
		return b.Dial(ctx, backend.ID(sb.ID))
	}, s.opts.Version)
	if err != nil {
		return nil, fmt.Errorf("connect to the agent of sandbox %q: %w", sb.Name, err)
	}
	att, err := s.attach(dctx, sb, client)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("sandbox %q: %w", sb.Name, err)
	}
	pctx, stopEvents := context.WithCancel(context.Background())
	c := &conn{client: client, att: att, stopEvents: stopEvents}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.close()
		return nil, errors.New("the daemon is stopping")
	}
	if old, ok := s.clients[sb.ID]; ok {
		old.close()
	}
	s.clients[sb.ID] = c
	s.mu.Unlock()
	go s.pump(pctx, sb, client)
	go s.keep(sb, c)
	return client, nil
}

// keep reconnects when a sandbox's guest connection dies while the sandbox runs, so
// its network tunnels come back without waiting for a command.
func (s *Service) keep(sb store.Sandbox, c *conn) {
	<-c.client.Done()
	c.stopEvents()
	c.att.close()
	for delay := 100 * time.Millisecond; ; delay = min(delay*2, 10*time.Second) {
		s.mu.Lock()
		current, ok := s.clients[sb.ID]
		stop := s.closed || !ok || current != c
		s.mu.Unlock()
		if stop {
			return // closed on purpose, or replaced
		}
		b, err := s.backendOf(sb)
		if err != nil {
			return
		}
		if st, err := b.State(context.Background(), backend.ID(sb.ID)); err != nil || st.State != backend.StateRunning {
			s.mu.Lock()
			if s.clients[sb.ID] == c {
				delete(s.clients, sb.ID)
			}
			s.mu.Unlock()
			return
		}
		_, err = s.client(context.Background(), sb)
		if err == nil {
			s.log.Info("reconnected to the agent", "sandbox", sb.Name)
			return
		}
		s.log.Warn("reconnect to the agent", "sandbox", sb.Name, "err", err, "retry_in", delay)
		time.Sleep(delay)
	}
}

// live returns the cached client of a sandbox if its connection is up.
func (s *Service) live(id string) *guestclient.Client {
	s.mu.Lock()
	c, ok := s.clients[id]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-c.client.Done():
		return nil
	default:
		return c.client
	}
}

func (s *Service) dropClient(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok {
		delete(s.clients, id)
		c.close()
	}
}

// Reconcile brings recorded states in line with the backends, after a daemon start.
func (s *Service) Reconcile(ctx context.Context) {
	s.events.Prune(ctx)
	rows, err := s.opts.Store.ListSandboxes(ctx)
	if err != nil {
		s.log.Error("reconcile: list sandboxes", "err", err)
		return
	}
	var revive []string
	for _, sb := range rows {
		if sb.State == "creating" {
			// The daemon died while creating it: finish the job of the failed create.
			s.log.Warn("reconcile: removing a sandbox whose creation was interrupted", "sandbox", sb.Name)
			if b, err := s.backendOf(sb); err == nil {
				b.Destroy(ctx, backend.ID(sb.ID))
			}
			s.opts.Store.DeleteSandbox(ctx, sb.ID)
			continue
		}
		in := s.info(ctx, sb)
		s.log.Info("reconcile", "sandbox", sb.Name, "recorded", sb.State, "actual", in.State)
		if sb.State == "running" && in.State == "stopped" {
			// It went down without paddock stopping it (the host rebooted): it comes
			// back, and its sessions with it.
			revive = append(revive, sb.Name)
			continue
		}
		if in.State != sb.State && (in.State == "running" || in.State == "stopped" || in.State == string(backend.StateSuspended)) {
			sb.State = in.State
			s.opts.Store.UpdateSandbox(ctx, sb)
		}
		if in.State == "running" {
			// Reconnect now: the sandbox's network tunnels ride on the connection.
			if _, err := s.client(ctx, sb); err != nil {
				s.log.Error("reconnect to a running sandbox", "sandbox", sb.Name, "err", err)
			}
		}
	}
	if len(revive) > 0 {
		go s.revive(ctx, revive)
	}
}

// revive starts again, one after another, the sandboxes that were running when the
// daemon last knew and are found stopped (after a host reboot), resuming their sessions,
// while the daemon serves.
func (s *Service) revive(ctx context.Context, names []string) {
	for _, name := range names {
		info, err := s.Start(ctx, name)
		if err != nil {
			s.log.Error("reconcile: start a sandbox that was running before", "sandbox", name, "err", err)
			continue
		}
		s.log.Info("reconcile: started a sandbox that was running before", "sandbox", name, "resumed", info.Resumed)
	}
}

// lost is the state of a sandbox its backend has no trace of (a wiped disk, a container
// removed behind paddock's back), with what brings it back.
func (s *Service) lost(ctx context.Context, name string) (state, detail string) {
	s.mu.Lock()
	newest := s.newest
	s.mu.Unlock()
	if newest != nil {
		if id, at, ok := newest(ctx, name); ok {
			return "lost", fmt.Sprintf("its backend lost it: `paddock up %s` restores its newest snapshot, %s (%s ago)", name, id, termtext.Age(time.Since(at)))
		}
	}
	return "lost", "its backend lost it, and it has no snapshot: remove it with `paddock rm " + name + "`"
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
