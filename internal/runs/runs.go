// Package runs keeps the daemon's runs of the host-side agent (`paddock run`): it starts
// the loop of internal/hostagent on a sandbox, records each turn and tool call in the
// state, streams what happens to whoever follows the run, publishes it on the event bus,
// and continues a run's conversation on request, after a daemon restart too.
package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
	"github.com/paddockhq/paddock/internal/hostagent"
	"github.com/paddockhq/paddock/internal/proxy/creds"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/store"
)

// Run statuses.
const (
	StatusRunning     = wire.RunRunning
	StatusDone        = wire.RunDone
	StatusFailed      = wire.RunFailed
	StatusCancelled   = wire.RunCancelled
	StatusStopped     = wire.RunStopped // by its budget
	StatusInterrupted = wire.RunInterrupted
)

// Event is wire.RunEvent (the API's wire type).
type Event = wire.RunEvent

// Request is wire.RunRequest (the API's wire type).
type Request = wire.RunRequest

// Options configure the Service.
type Options struct {
	Sandboxes *sandbox.Service
	Store     *store.Store
	Creds     *creds.Proxy
	Config    config.Run
	Logger    *slog.Logger
	// Retry overrides hostagent.DefaultRetry (tests).
	Retry hostagent.Retry
	// Hold, when set, marks a sandbox in use until the returned func is called, so that
	// the idle stop leaves a sandbox alone while a run works on it.
	Hold func(sandbox string) (release func())
}

// Service runs and records runs. Runs live in the daemon: a follower that goes away
// does not stop one; Cancel does.
type Service struct {
	opts Options
	base context.Context
	mu   sync.Mutex
	live map[string]*live
}

// live is a run at work.
type live struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	subs   map[chan Event]struct{}
	done   chan struct{}
}

// New returns the service. Runs the state holds as running were cut short by the end of
// the daemon that ran them: they are marked interrupted, to be continued on request.
// Runs are cancelled when base is done.
func New(base context.Context, opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	n, err := opts.Store.InterruptRuns(base, "the paddock daemon stopped during the run: `paddock run SANDBOX --resume ID` continues it")
	if err != nil {
		return nil, err
	}
	if n > 0 {
		opts.Logger.Info("runs interrupted by the last daemon's end", "runs", n)
	}
	return &Service{opts: opts, base: base, live: map[string]*live{}}, nil
}

// newID is a run id: "r" and 10 hex digits.
func newID() string {
	b := make([]byte, 5)
	rand.Read(b)
	return "r" + hex.EncodeToString(b)
}

// title is a prompt's first line, cut short.
func title(prompt string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if r := []rune(line); len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	return line
}

// model returns the loop's model and its name: the Anthropic Messages API for the
// anthropic provider, the OpenAI Responses API for openai and every OpenAI-compatible
// provider the config declares.
func (s *Service) model(name string) (hostagent.Model, string, string, error) {
	provider := s.opts.Config.Provider
	if provider == "" {
		provider = "anthropic"
	}
	if name == "" {
		name = s.opts.Config.Model
	}
	if name == "" {
		name = config.DefaultRunModel
	}
	p, ok := s.opts.Creds.Provider(provider)
	if !ok {
		return nil, "", "", apperr.Invalid("declare it in the config: [providers."+provider+"]", "no provider %q", provider)
	}
	if _, err := p.Key(s.base); err != nil {
		return nil, "", "", apperr.Unavailable("", "paddock run: %v", err)
	}
	switch provider {
	case "anthropic":
		return &hostagent.Anthropic{BaseURL: p.Upstream.String(), Key: p.Key, Model: name}, name, provider, nil
	case "gemini":
		return nil, "", "", apperr.Invalid(`set [run] provider to anthropic, openai or an OpenAI-compatible provider`,
			"paddock run speaks the Anthropic and OpenAI APIs, not Gemini's")
	}
	return &hostagent.OpenAI{BaseURL: p.Upstream.String(), Key: p.Key, Model: name}, name, provider, nil
}

// Start begins a run of a prompt on a sandbox; sink receives its events until it
// finishes (the caller may stop reading: the run goes on).
func (s *Service) Start(ctx context.Context, name string, req Request, sink func(Event)) (store.Run, error) {
	if strings.TrimSpace(req.Prompt) == "" {
		return store.Run{}, apperr.Invalid("say what to do: paddock run SANDBOX \"PROMPT\"", "the prompt is empty")
	}
	sb, err := s.opts.Sandboxes.Record(ctx, name)
	if err != nil {
		return store.Run{}, err
	}
	m, model, provider, err := s.model(req.Model)
	if err != nil {
		return store.Run{}, err
	}
	now := time.Now()
	r := store.Run{ID: newID(), SandboxID: sb.ID, Sandbox: sb.Name, Provider: provider, Model: model, Title: title(req.Prompt),
		Status: StatusRunning, Created: now, Updated: now, Conversation: "[]"}
	if err := s.opts.Store.AddRun(ctx, r); err != nil {
		return store.Run{}, err
	}
	return s.begin(ctx, r, sb, m, req, sink)
}

// Continue sends a run another prompt: its conversation goes on where it stopped.
func (s *Service) Continue(ctx context.Context, id string, req Request, sink func(Event)) (store.Run, error) {
	if strings.TrimSpace(req.Prompt) == "" {
		return store.Run{}, apperr.Invalid("say what to do next", "the prompt is empty")
	}
	r, err := s.Get(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	sb, err := s.opts.Sandboxes.Record(ctx, r.Sandbox)
	if err != nil {
		return store.Run{}, err
	}
	if sb.ID != r.SandboxID {
		return store.Run{}, apperr.Conflict("", "run %s was made on another sandbox named %s, since removed", r.ID, r.Sandbox)
	}
	if req.Model == "" {
		req.Model = r.Model
	}
	m, _, _, err := s.model(req.Model)
	if err != nil {
		return store.Run{}, err
	}
	return s.begin(ctx, r, sb, m, req, sink)
}

// Get returns a run by id or unique id prefix.
func (s *Service) Get(ctx context.Context, id string) (store.Run, error) {
	r, err := s.opts.Store.GetRun(ctx, id)
	if errors.Is(err, store.ErrNoRun) {
		return store.Run{}, apperr.NotFound("`paddock runs` lists them", "%v", err)
	}
	return r, err
}

// List lists runs, newest first; of one sandbox when name is not empty.
func (s *Service) List(ctx context.Context, name string) ([]store.Run, error) {
	return s.opts.Store.Runs(ctx, name)
}

// Steps lists a run's steps.
func (s *Service) Steps(ctx context.Context, id string) ([]store.RunStep, error) {
	return s.opts.Store.RunSteps(ctx, id)
}

// Cancel stops a run at work: its running tool is killed, and it is recorded as
// cancelled. It waits until the run has stopped.
func (s *Service) Cancel(ctx context.Context, id string) (store.Run, error) {
	r, err := s.Get(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	s.mu.Lock()
	l := s.live[r.ID]
	s.mu.Unlock()
	if l == nil {
		return r, apperr.Conflict("", "run %s is not at work (%s)", r.ID, r.Status)
	}
	l.cancel()
	select {
	case <-l.done:
	case <-ctx.Done():
		return store.Run{}, ctx.Err()
	}
	return s.Get(ctx, r.ID)
}

// Follow streams the events of a run at work to sink until it finishes; false when it is
// not at work.
func (s *Service) Follow(ctx context.Context, id string, sink func(Event)) bool {
	s.mu.Lock()
	l := s.live[id]
	s.mu.Unlock()
	if l == nil {
		return false
	}
	ch := l.subscribe()
	defer l.unsubscribe(ch)
	relay(ctx, ch, l.done, sink)
	return true
}

func (l *live) subscribe() chan Event {
	ch := make(chan Event, 4096)
	l.mu.Lock()
	l.subs[ch] = struct{}{}
	l.mu.Unlock()
	return ch
}

func (l *live) unsubscribe(ch chan Event) {
	l.mu.Lock()
	delete(l.subs, ch)
	l.mu.Unlock()
}

// publish hands ev to every follower; one that does not keep up loses output events,
// never others.
func (l *live) publish(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.subs {
		if ev.Type == "output" || ev.Type == "text" {
			select {
			case ch <- ev:
			default:
			}
			continue
		}
		ch <- ev
	}
}

// begin runs a prompt on r in the background and streams its events to sink.
func (s *Service) begin(ctx context.Context, r store.Run, sb store.Sandbox, m hostagent.Model, req Request, sink func(Event)) (store.Run, error) {
	var conv []hostagent.Message
	if err := json.Unmarshal([]byte(r.Conversation), &conv); err != nil {
		return store.Run{}, fmt.Errorf("run %s: its conversation is unreadable: %w", r.ID, err)
	}
	if _, err := s.opts.Sandboxes.Client(ctx, r.Sandbox); err != nil {
		return store.Run{}, err
	}
	runCtx, cancel := context.WithCancel(s.base)
	l := &live{cancel: cancel, subs: map[chan Event]struct{}{}, done: make(chan struct{})}
	s.mu.Lock()
	if s.live[r.ID] != nil {
		s.mu.Unlock()
		cancel()
		return store.Run{}, apperr.Conflict(fmt.Sprintf("wait for it, or cancel it: paddock run cancel %s", r.ID), "run %s is still at work", r.ID)
	}
	s.live[r.ID] = l
	s.mu.Unlock()

	r.Status, r.Error = StatusRunning, ""
	if err := s.opts.Store.UpdateRun(ctx, r); err != nil {
		s.forget(r.ID, l)
		return store.Run{}, err
	}
	ch := l.subscribe()
	budget := req.RunBudget
	if budget.MaxTurns == 0 {
		budget.MaxTurns = s.opts.Config.MaxTurns
	}
	if budget.MaxTurns == 0 {
		budget.MaxTurns = 200
	}
	if budget.MaxTokens == 0 {
		budget.MaxTokens = s.opts.Config.MaxTokens
	}
	rec := &recorder{svc: s, live: l, run: r, sb: sb}
	loop := &hostagent.Loop{Model: m, Tools: hostagent.NewTools(&guest{s.opts.Sandboxes, r.Sandbox}), System: hostagent.SystemPrompt,
		ContextTokens: s.opts.Config.ContextTokens, Budget: budget, Retry: s.opts.Retry, Events: rec}
	rec.step(store.RunStep{Kind: "prompt", Input: req.Prompt, Started: time.Now()})
	s.opts.Sandboxes.Emit(ctx, sb, events.Event{Kind: "run-started", Detail: fmt.Sprintf("run %s: %s", r.ID, title(req.Prompt)),
		Attrs: map[string]string{"run": r.ID, "title": title(req.Prompt)}})
	started := r
	l.publish(Event{Type: "started", Run: &started})
	release := func() {}
	if s.opts.Hold != nil {
		release = s.opts.Hold(r.Sandbox)
	}
	go func() {
		defer release()
		defer cancel()
		_, err := loop.Run(runCtx, conv, req.Prompt)
		rec.finish(err)
		s.forget(r.ID, l)
		close(l.done)
	}()
	relay(ctx, ch, l.done, sink)
	l.unsubscribe(ch)
	return s.Get(context.WithoutCancel(ctx), r.ID)
}

// relay passes a follower's events to sink until the run finishes (what was published
// before it ended included) or ctx ends.
func relay(ctx context.Context, ch chan Event, done chan struct{}, sink func(Event)) {
	for {
		select {
		case ev := <-ch:
			sink(ev)
			if ev.Type == "finished" {
				return
			}
		case <-done:
			for {
				select {
				case ev := <-ch:
					sink(ev)
				default:
					return
				}
			}
		case <-ctx.Done():
			return
		}
	}
}

func (s *Service) forget(id string, l *live) {
	s.mu.Lock()
	if s.live[id] == l {
		delete(s.live, id)
	}
	s.mu.Unlock()
}

// guest is a sandbox's guest for the tools, asked for its connection at each call: a run
// outlives a connection that drops and comes back (a container the engine restarted).
type guest struct {
	sandboxes *sandbox.Service
	name      string
}

func (g *guest) Exec(ctx context.Context, opts guestclient.ExecOptions) (int, error) {
	c, err := g.sandboxes.Client(ctx, g.name)
	if err != nil {
		return 0, err
	}
	return c.Exec(ctx, opts)
}

func (g *guest) ReadFile(ctx context.Context, root, path string, w io.Writer) (int64, error) {
	c, err := g.sandboxes.Client(ctx, g.name)
	if err != nil {
		return 0, err
	}
	return c.ReadFile(ctx, root, path, w)
}

func (g *guest) WriteFile(ctx context.Context, root, path string, mode fs.FileMode, parents bool, r io.Reader) (int64, error) {
	c, err := g.sandboxes.Client(ctx, g.name)
	if err != nil {
		return 0, err
	}
	return c.WriteFile(ctx, root, path, mode, parents, r)
}

func (g *guest) Stat(ctx context.Context, root, path string) (*guestpb.FileInfo, error) {
	c, err := g.sandboxes.Client(ctx, g.name)
	if err != nil {
		return nil, err
	}
	return c.Stat(ctx, root, path)
}

func (g *guest) List(ctx context.Context, root, path string) ([]*guestpb.FileInfo, error) {
	c, err := g.sandboxes.Client(ctx, g.name)
	if err != nil {
		return nil, err
	}
	return c.List(ctx, root, path)
}
