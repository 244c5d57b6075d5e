// Package sandbox is the service layer: it turns user requests (up, start, stop, rm,
// exec...) into backend calls, state records and guest agent calls, so that the API
// handlers stay thin.
package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/agentclient"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/store"
)

// Info is a sandbox as the user sees it.
type Info struct {
	Name       string    `json:"name"`
	Backend    string    `json:"backend"`
	State      string    `json:"state"`
	Detail     string    `json:"detail,omitempty"`
	SourcePath string    `json:"source_path,omitempty"`
	SourceURL  string    `json:"source_url,omitempty"`
	BaseCommit string    `json:"base_commit,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Options configure a Service.
type Options struct {
	Store *store.Store
	// Backends are the constructed backends, by name.
	Backends map[string]backend.Backend
	// DefaultBackend is used when a request names none; empty picks the first available
	// in the order of Preference.
	DefaultBackend string
	Agent          AgentBinary
	Version        string
	Logger         *slog.Logger
}

// Preference is the order in which backends are tried when none is configured.
var Preference = []string{"bwrap", "docker"}

// Service manages sandboxes. It is safe for concurrent use; lifecycle operations on one
// sandbox are serialised.
type Service struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	locks   map[string]*sync.Mutex // by sandbox ID
	clients map[string]*agentclient.Client
}

// New constructs a Service.
func New(opts Options) *Service {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{opts: opts, log: log, locks: map[string]*sync.Mutex{}, clients: map[string]*agentclient.Client{}}
}

// Close drops every agent connection; sandboxes keep running.
func (s *Service) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, c := range s.clients {
		c.Close()
		delete(s.clients, id)
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

func (s *Service) record(ctx context.Context, name string) (store.Sandbox, error) {
	sb, err := s.opts.Store.GetSandbox(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return sb, notFound(name)
	}
	return sb, err
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
	for _, n := range Preference {
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
	return nil, apperr.Unavailable("run `paddock doctor` for how to fix it", "no backend is available here: %v", errors.Join(reasons...))
}

func unavailable(err error) error {
	var ue *backend.UnavailableError
	if errors.As(err, &ue) {
		return apperr.Unavailable(ue.Fix, "%s", ue.Error())
	}
	return apperr.Unavailable("run `paddock doctor`", "%v", err)
}

// List returns every sandbox with its live state.
func (s *Service) List(ctx context.Context) ([]Info, error) {
	rows, err := s.opts.Store.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(rows))
	for _, sb := range rows {
		out = append(out, s.info(ctx, sb))
	}
	return out, nil
}

// Get returns one sandbox with its live state.
func (s *Service) Get(ctx context.Context, name string) (Info, error) {
	sb, err := s.record(ctx, name)
	if err != nil {
		return Info{}, err
	}
	return s.info(ctx, sb), nil
}

// info combines the record with what the backend reports now.
func (s *Service) info(ctx context.Context, sb store.Sandbox) Info {
	in := Info{Name: sb.Name, Backend: sb.Backend, State: sb.State, Detail: sb.Detail,
		SourcePath: sb.SourcePath, SourceURL: sb.SourceURL, BaseCommit: sb.BaseCommit, CreatedAt: sb.CreatedAt}
	if sb.State == "creating" {
		return in
	}
	b, err := s.backendOf(sb)
	if err != nil {
		in.State, in.Detail = "error", err.Error()
		return in
	}
	st, err := b.State(ctx, backend.ID(sb.ID))
	if err != nil {
		in.State, in.Detail = "error", err.Error()
		return in
	}
	switch st.State {
	case backend.StateMissing:
		in.State, in.Detail = "error", "the backend has no trace of this sandbox; remove it with `paddock rm "+sb.Name+"`"
	case backend.StateCreated:
		in.State = "stopped"
	default:
		in.State = string(st.State)
		if st.Detail != "" {
			in.Detail = st.Detail
		}
	}
	return in
}

// Start starts a stopped sandbox; starting a running one changes nothing.
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
	s.opts.Store.AddEvent(ctx, sb.ID, "started", "")
	return s.info(ctx, sb), nil
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
	s.dropClient(sb.ID)
	if err := b.Stop(ctx, backend.ID(sb.ID)); err != nil {
		return Info{}, fmt.Errorf("stop sandbox %q: %w", name, err)
	}
	sb.State, sb.Detail = "stopped", ""
	if err := s.opts.Store.UpdateSandbox(ctx, sb); err != nil {
		return Info{}, err
	}
	s.opts.Store.AddEvent(ctx, sb.ID, "stopped", "")
	return s.info(ctx, sb), nil
}

// Remove destroys a sandbox. A running sandbox needs force.
func (s *Service) Remove(ctx context.Context, name string, force bool) error {
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
		return apperr.Conflict(fmt.Sprintf("stop it first (`paddock stop %s`) or remove it anyway with `paddock rm -f %s`", name, name),
			"sandbox %q is running", name)
	}
	s.dropClient(sb.ID)
	if err := b.Destroy(ctx, backend.ID(sb.ID)); err != nil {
		return fmt.Errorf("remove sandbox %q: %w", name, err)
	}
	return s.opts.Store.DeleteSandbox(ctx, sb.ID)
}

// Client returns a connection to the sandbox's guest agent, dialling a new one when
// there is none or the last one died.
func (s *Service) Client(ctx context.Context, name string) (*agentclient.Client, error) {
	sb, err := s.record(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.client(ctx, sb)
}

func (s *Service) client(ctx context.Context, sb store.Sandbox) (*agentclient.Client, error) {
	s.mu.Lock()
	c, ok := s.clients[sb.ID]
	s.mu.Unlock()
	if ok {
		select {
		case <-c.Done():
		default:
			return c, nil
		}
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
		return nil, apperr.Conflict(fmt.Sprintf("start it with `paddock start %s`", sb.Name), "sandbox %q is not running (%s)", sb.Name, st.State)
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	c, err = agentclient.New(dctx, func(ctx context.Context) (net.Conn, error) {
		return b.Dial(ctx, backend.ID(sb.ID))
	}, s.opts.Version)
	if err != nil {
		return nil, fmt.Errorf("connect to the agent of sandbox %q: %w", sb.Name, err)
	}
	s.mu.Lock()
	if old, ok := s.clients[sb.ID]; ok && old != c {
		old.Close()
	}
	s.clients[sb.ID] = c
	s.mu.Unlock()
	return c, nil
}

func (s *Service) dropClient(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok {
		c.Close()
		delete(s.clients, id)
	}
}

// Reconcile brings recorded states in line with the backends, after a daemon start.
func (s *Service) Reconcile(ctx context.Context) {
	rows, err := s.opts.Store.ListSandboxes(ctx)
	if err != nil {
		s.log.Error("reconcile: list sandboxes", "err", err)
		return
	}
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
		if in.State != sb.State && (in.State == "running" || in.State == "stopped") {
			sb.State = in.State
			s.opts.Store.UpdateSandbox(ctx, sb)
		}
	}
}
