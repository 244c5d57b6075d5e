// Package task runs tasks: one prompt tried by several agents in parallel, each attempt
// in a sandbox of its own started from one prepared base, checked by the user's own
// commands when its agent's turn ends, ranked (checks first, then a judge's verdict,
// then the smaller diff, the lower cost, the shorter time), reviewed, and landed through
// a merge queue per host repository and branch, or as a pull request.
//
// A task is kept whole in the state (store.PutTask) and every change to it goes through
// update, under the task's lock, so that the daemon's restart finds each task as its
// last change left it. The work of a task (preparing, checks, judging, the queue) runs
// in the daemon, not in the client that asked for it.
package task

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/store"
)

// Kinds of the events a task publishes, on the sandbox of the attempt they concern.
const (
	EventAttemptPassed = "task-attempt-passed" // an attempt's checks all passed
	EventAttemptFailed = "task-attempt-failed" // an attempt's checks failed, or it could not start
	EventTaskDone      = "task-done"           // every attempt's agent ended its turn and was checked
	EventConflict      = "task-conflict"       // a landing conflicted: the attempt's agent was told
	EventLanded        = "task-landed"         // an attempt landed (or its pull request was opened)
)

// Options configure the Service.
type Options struct {
	Sandboxes *sandbox.Service
	Sessions  *session.Service
	Store     *store.Store
	// Bus is the event bus the service follows (session statuses, branches moved).
	Bus *events.Bus
	// Emit records and publishes an event of a sandbox (eventlog.Log.Emit).
	Emit   func(ctx context.Context, sb store.Sandbox, ev events.Event)
	Logger *slog.Logger
	// FinalSnapshot takes the snapshot a sandbox is removed after (the snapshot
	// service's Take); nil: this daemon keeps no snapshots, and Remove says so.
	FinalSnapshot func(ctx context.Context, sandboxName string, progress func(string)) error
	// GitHub is where pull requests are opened.
	GitHub GitHub
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// GitHub says how to reach GitHub's REST API for pull requests.
type GitHub struct {
	// APIURL is the REST API's root; empty is https://api.github.com.
	APIURL string
	// Token returns the token pull requests are opened (and branches pushed) with.
	Token func() (string, error)
	// HTTP is the client the REST API is called through; nil is one with a 30 s timeout.
	HTTP *http.Client
	// GitEnv is added to the environment of the push to the remote: a test's
	// GIT_SSL_CAINFO, say.
	GitEnv []string
}

// Service keeps the tasks and works on them.
type Service struct {
	opts Options
	base context.Context
	log  *slog.Logger

	mu    sync.Mutex
	locks map[string]*sync.Mutex // one per task, for update
	// work counts the goroutines working on tasks, for Close.
	work sync.WaitGroup
	// createMu makes one task at a time (Create), so that two never take one name.
	createMu sync.Mutex
	// runs are the attempts' check runs under way (check.go).
	runs checkRuns
	// queue is the merge queue's workers (queue.go).
	queue queueState
}

// New returns the service; Start sets it working.
func New(base context.Context, opts Options) *Service {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{opts: opts, base: base, log: log, locks: map[string]*sync.Mutex{}}
}

// Start follows the event bus for the attempts' turns and commits, and takes up the work
// a restart cut short: tasks still preparing, attempts whose checks had not run, and the
// merge queue's open entries.
func (s *Service) Start(ctx context.Context) {
	s.work.Go(func() { s.watch(ctx) })
	s.work.Go(func() { s.resume(ctx) })
	s.work.Go(func() { s.runQueue(ctx) })
}

// Wait waits for the service's goroutines, once the context given to Start has ended.
func (s *Service) Wait() { s.work.Wait() }

// List returns every task, each with its attempts ranked.
func (s *Service) List(ctx context.Context) ([]wire.Task, error) {
	ts, err := s.opts.Store.ListTasks(ctx)
	if err != nil {
		return nil, err
	}
	for i := range ts {
		Rank(ts[i].Attempts)
	}
	return ts, nil
}

// Get returns a task, its attempts ranked.
func (s *Service) Get(ctx context.Context, name string) (wire.Task, error) {
	t, err := s.opts.Store.GetTask(ctx, name)
	if errors.Is(err, store.ErrNoTask) {
		return t, apperr.NotFound("`paddock task ls` lists the tasks", "no task named %q", name)
	}
	if err != nil {
		return t, err
	}
	Rank(t.Attempts)
	return t, nil
}

// lock returns the lock of a task's record.
func (s *Service) lock(name string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.locks[name]
	if !ok {
		l = &sync.Mutex{}
		s.locks[name] = l
	}
	return l
}

// update reads a task, lets change edit it, ranks its attempts and writes it back, all
// under the task's lock. A change that returns an error writes nothing.
func (s *Service) update(ctx context.Context, name string, change func(t *wire.Task) error) (wire.Task, error) {
	l := s.lock(name)
	l.Lock()
	defer l.Unlock()
	t, err := s.Get(ctx, name)
	if err != nil {
		return t, err
	}
	if err := change(&t); err != nil {
		return t, err
	}
	t.Updated = s.opts.Now()
	Rank(t.Attempts)
	return t, s.opts.Store.PutTask(context.WithoutCancel(ctx), t)
}

// updateAttempt is update for one attempt of a task.
func (s *Service) updateAttempt(ctx context.Context, name string, n int, change func(t *wire.Task, a *wire.Attempt) error) (wire.Task, error) {
	return s.update(ctx, name, func(t *wire.Task) error {
		a := attemptOf(t, n)
		if a == nil {
			return apperr.NotFound(fmt.Sprintf("`paddock task show %s` lists its attempts", name), "task %s has no attempt %d", name, n)
		}
		return change(t, a)
	})
}

// attemptOf returns the attempt numbered n, or nil.
func attemptOf(t *wire.Task, n int) *wire.Attempt {
	for i := range t.Attempts {
		if t.Attempts[i].N == n {
			return &t.Attempts[i]
		}
	}
	return nil
}

// attemptBySandbox returns the task and attempt whose sandbox this is.
func (s *Service) attemptBySandbox(ctx context.Context, sandboxName string) (wire.Task, int, bool) {
	ts, err := s.opts.Store.ListTasks(ctx)
	if err != nil {
		return wire.Task{}, 0, false
	}
	for _, t := range ts {
		for _, a := range t.Attempts {
			if a.Sandbox == sandboxName {
				return t, a.N, true
			}
		}
	}
	return wire.Task{}, 0, false
}

// emit publishes an event of a task on the sandbox of one of its attempts.
func (s *Service) emit(ctx context.Context, sandboxName, kind, detail string, attrs map[string]string) {
	if s.opts.Emit == nil {
		return
	}
	sb, err := s.opts.Store.GetSandbox(ctx, sandboxName)
	if err != nil {
		s.log.Debug("an event of a task with no sandbox", "sandbox", sandboxName, "kind", kind, "err", err)
		return
	}
	s.opts.Emit(ctx, sb, events.Event{Time: s.opts.Now(), Sandbox: sandboxName, Kind: kind, Detail: detail, Attrs: attrs})
}
