// Package checkpoint keeps a time machine for every sandbox: a checkpoint at the end of
// each agent turn (the workspace, whatever changed it, and the conversation's position),
// a turn's diff, a rewind of files and conversation together, a bisect of the turns with
// a check, and a fork of a sandbox with its conversation onto any backend.
//
// A checkpoint's files are a commit in the sandbox's own repository, written with an
// index of its own (refs/paddock/checkpoints/SEQ), so the agent's index and branches do
// not move and only what changed since the last checkpoint is stored; the conversation
// is a blob beside it. The daemon's store keeps the record of each (wire.Checkpoint); the
// commit's message holds the same record, so the checkpoints travel with the sandbox's
// repository into its snapshots and forks.
package checkpoint

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/store"
)

// Options are what the service works with.
type Options struct {
	Sandboxes *sandbox.Service
	Sessions  *session.Service
	Store     *store.Store
	// Bus is the event bus the service follows for the ends of agents' turns.
	Bus *events.Bus
	// Emit records and publishes an event of a sandbox (eventlog.Log.Emit).
	Emit   func(ctx context.Context, sb store.Sandbox, ev events.Event)
	Logger *slog.Logger
	// Keep bounds a sandbox's checkpoints: at most Keep (0: DefaultKeep) and MaxBytes
	// stored (0: no bound); the oldest unnamed ones are pruned first.
	Keep     int
	MaxBytes int64
	// Exclude are git pathspecs of the workspace every checkpoint leaves out besides
	// what git ignores ([checkpoints] exclude).
	Exclude []string
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// DefaultKeep is how many checkpoints a sandbox keeps when Options.Keep is 0.
const DefaultKeep = 200

// Service is the time machine of the daemon's sandboxes.
type Service struct {
	opts Options
	log  *slog.Logger

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per sandbox: one checkpoint, rewind or fork at a time
	// readBack holds the sandboxes whose repositories were looked at for checkpoints
	// the daemon had no record of (List).
	readBack map[string]bool
	// worked holds the sessions ("SANDBOX/SESSION") seen at work since their last
	// checkpoint (watch).
	worked map[string]bool
	// hushed holds the sessions whose agents are being stopped and started again (a
	// rewind): their turns' ends take no checkpoint meanwhile.
	hushed map[string]int
	work   sync.WaitGroup
}

// New makes the service; Start follows the event bus.
func New(opts Options) *Service {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	return &Service{opts: opts, log: log, locks: map[string]*sync.Mutex{}}
}

// Start follows the event bus (a session's agent ending its turn takes a checkpoint)
// and finishes the rewinds a killed daemon cut off.
func (s *Service) Start(ctx context.Context) {
	s.work.Go(func() { s.watch(ctx) })
	s.work.Go(func() { s.finishRewinds(ctx) })
}

// Wait waits for the service's goroutines, once the context given to Start has ended.
func (s *Service) Wait() { s.work.Wait() }

// lock holds the sandbox's lock: one checkpoint, rewind or fork of a sandbox at a time.
func (s *Service) lock(sandboxID string) func() {
	s.mu.Lock()
	l, ok := s.locks[sandboxID]
	if !ok {
		l = &sync.Mutex{}
		s.locks[sandboxID] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// Resolve finds a checkpoint of a sandbox by what a user typed: a turn number of the
// session ("3": the newest checkpoint of that turn), a sequence number ("#12"), or a
// checkpoint's name.
func (s *Service) Resolve(ctx context.Context, sandboxName, sessionName, ref string) (wire.Checkpoint, error) {
	sb, err := s.opts.Store.GetSandbox(ctx, sandboxName)
	if err != nil {
		return wire.Checkpoint{}, err
	}
	all, err := s.opts.Store.ListCheckpoints(ctx, sb.ID, sessionName)
	if err != nil {
		return wire.Checkpoint{}, err
	}
	return resolveIn(all, sandboxName, sessionName, ref)
}

// resolveIn is Resolve over a sandbox's checkpoints, the oldest first.
func resolveIn(all []wire.Checkpoint, sandboxName, sessionName, ref string) (wire.Checkpoint, error) {
	hint := fmt.Sprintf("see them with `paddock checkpoints %s`", target(sandboxName, sessionName))
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return wire.Checkpoint{}, apperr.Invalid(hint, "name a checkpoint: a turn number, #SEQ or a checkpoint's name")
	}
	if seq, ok := strings.CutPrefix(ref, "#"); ok {
		n, err := strconv.Atoi(seq)
		if err != nil {
			return wire.Checkpoint{}, apperr.Invalid(hint, "%q is not a checkpoint's number", ref)
		}
		for _, c := range all {
			if c.Seq == n {
				return c, nil
			}
		}
		return wire.Checkpoint{}, apperr.NotFound(hint, "%s has no checkpoint #%d", target(sandboxName, sessionName), n)
	}
	if n, err := strconv.Atoi(ref); err == nil {
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].Turn == n && all[i].Kind == wire.CheckpointTurn && (sessionName == "" || all[i].Session == sessionName) {
				return all[i], nil
			}
		}
		return wire.Checkpoint{}, apperr.NotFound(hint, "%s has no checkpoint of turn %d", target(sandboxName, sessionName), n)
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Name == ref {
			return all[i], nil
		}
	}
	return wire.Checkpoint{}, apperr.NotFound(hint, "%s has no checkpoint named %q", target(sandboxName, sessionName), ref)
}

// target is SANDBOX or SANDBOX/SESSION.
func target(sandboxName, sessionName string) string {
	if sessionName == "" {
		return sandboxName
	}
	return sandboxName + "/" + sessionName
}
