package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/proxy/egress"
	"github.com/paddockhq/paddock/internal/store"
)

// DefaultLearnFor is how long learn mode lasts when not told.
const DefaultLearnFor = wire.DefaultLearnFor

// maxLearnFor bounds learn mode: a record meant to shape an allowlist, not a log.
const maxLearnFor = 7 * 24 * time.Hour

// learnFlushEvery is how often learned requests are written: a sandbox making thousands
// of requests a second costs one write transaction a second.
const learnFlushEvery = time.Second

// maxPendingLearned bounds the destinations waiting to be written: past it they are
// written at once, so that endless distinct destinations cannot grow the daemon's memory.
const maxPendingLearned = 1000

// Learning is wire.Learning.
type Learning = wire.Learning

// learnKey is one destination of one sandbox.
type learnKey struct {
	sandboxID, host string
	port            int
}

// learnWindow is a sandbox learning until a time.
type learnWindow struct {
	id    string
	until time.Time
}

// learner holds the learning sandboxes and the requests not written yet.
type learner struct {
	once    sync.Once
	mu      sync.Mutex
	active  map[string]learnWindow // by sandbox name
	pending map[learnKey]*store.NetLearned
	timer   *time.Timer // the flush scheduled, nil when none
	wmu     sync.Mutex  // held while a batch is written, so that Flush waits for it
}

// load reads the sandboxes still learning from the store, once: learn mode survives a
// daemon restart.
func (p *Rules) loadLearning(ctx context.Context) {
	l := &p.learn
	l.once.Do(func() {
		all, err := p.opts.Store.NetLearnings(ctx)
		if err != nil {
			p.log.Error("read egress learn mode", "err", err)
		}
		names := map[string]string{}
		if sbs, err := p.opts.Store.ListSandboxes(ctx); err == nil {
			for _, sb := range sbs {
				names[sb.ID] = sb.Name
			}
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.active == nil {
			l.active = map[string]learnWindow{}
		}
		now := time.Now()
		for _, w := range all {
			if name, ok := names[w.SandboxID]; ok && w.Until.After(now) {
				if _, set := l.active[name]; !set {
					l.active[name] = learnWindow{id: w.SandboxID, until: w.Until}
				}
			}
		}
	})
}

// Learn records a request the egress proxy decided (egress.Options.OnRequest) when its
// sandbox is learning; it does nothing otherwise. Requests are batched per destination
// and written at most once a second.
func (p *Rules) Learn(r egress.Request) {
	p.loadLearning(context.Background())
	l := &p.learn
	l.mu.Lock()
	w, ok := l.active[r.Sandbox]
	if !ok || r.Time.After(w.until) {
		l.mu.Unlock()
		return
	}
	key := learnKey{w.id, r.Host, r.Port}
	d := l.pending[key]
	if d == nil {
		if len(l.pending) >= maxPendingLearned {
			l.mu.Unlock()
			p.flushLearned(context.Background())
			l.mu.Lock()
		}
		if l.pending == nil {
			l.pending = map[learnKey]*store.NetLearned{}
		}
		d = &store.NetLearned{SandboxID: w.id, Host: r.Host, Port: r.Port, FirstSeen: r.Time}
		l.pending[key] = d
	}
	d.LastSeen = r.Time
	d.Count++
	if !r.Allowed {
		d.Refused++
		d.Reason = r.Reason
	}
	d.Methods = addOnce(d.Methods, r.Method, 16)
	if r.Path != "" {
		d.Paths = addOnce(d.Paths, truncate(r.Path, 200), 8)
	}
	if l.timer == nil {
		l.timer = time.AfterFunc(learnFlushEvery, func() { p.flushLearned(context.Background()) })
	}
	l.mu.Unlock()
}

// flushLearned writes the learned requests not written yet.
func (p *Rules) flushLearned(ctx context.Context) {
	l := &p.learn
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	batch := make([]store.NetLearned, 0, len(l.pending))
	for _, d := range l.pending {
		batch = append(batch, *d)
	}
	l.pending = nil
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.mu.Unlock()
	if err := p.opts.Store.AddNetLearned(ctx, batch); err != nil {
		p.log.Error("record egress learn mode", "err", err)
	}
}

// StartLearning puts a sandbox in learn mode for d (DefaultLearnFor when 0), clearing
// what an earlier one learned: every request its egress proxy decides is recorded, and
// nothing is allowed that was not.
func (p *Rules) StartLearning(ctx context.Context, sandbox string, d time.Duration) (Learning, error) {
	if d == 0 {
		d = DefaultLearnFor
	}
	if d < 0 || d > maxLearnFor {
		return Learning{}, apperr.Invalid("give a duration such as 30m, 2h or 24h", "learn for between a second and %s, not %s", maxLearnFor, d)
	}
	sb, err := p.opts.Sandboxes.Get(ctx, sandbox)
	if err != nil {
		return Learning{}, err
	}
	if sb.Network == "open" {
		return Learning{}, apperr.Invalid("learn mode is for sandboxes with a closed network (paddock up --network closed)",
			"sandbox %s has an open network: its requests do not go through the egress proxy, so there is nothing to learn", sandbox)
	}
	p.loadLearning(ctx)
	p.flushLearned(ctx)
	now := time.Now()
	if err := p.opts.Store.StartNetLearning(ctx, sb.ID, now, now.Add(d)); err != nil {
		return Learning{}, err
	}
	p.learn.mu.Lock()
	p.learn.active[sb.Name] = learnWindow{id: sb.ID, until: now.Add(d)}
	p.learn.mu.Unlock()
	return p.Learning(ctx, sandbox)
}

// StopLearning ends a sandbox's learn mode now, keeping what it learned.
func (p *Rules) StopLearning(ctx context.Context, sandbox string) (Learning, error) {
	sb, err := p.opts.Sandboxes.Get(ctx, sandbox)
	if err != nil {
		return Learning{}, err
	}
	p.loadLearning(ctx)
	p.learn.mu.Lock()
	delete(p.learn.active, sb.Name)
	p.learn.mu.Unlock()
	p.flushLearned(ctx)
	if err := p.opts.Store.StopNetLearning(ctx, sb.ID, time.Now()); errors.Is(err, store.ErrNotFound) {
		return Learning{}, notLearned(sandbox)
	} else if err != nil {
		return Learning{}, err
	}
	return p.Learning(ctx, sandbox)
}

// Learning reports a sandbox's learn mode, after writing what it learned so far.
func (p *Rules) Learning(ctx context.Context, sandbox string) (Learning, error) {
	out, _, err := p.learned(ctx, sandbox)
	return out, err
}

// learned is Learning with the destinations it counts.
func (p *Rules) learned(ctx context.Context, sandbox string) (Learning, []store.NetLearned, error) {
	sb, err := p.opts.Sandboxes.Get(ctx, sandbox)
	if err != nil {
		return Learning{}, nil, err
	}
	p.flushLearned(ctx)
	w, err := p.opts.Store.NetLearningOf(ctx, sb.ID)
	if errors.Is(err, store.ErrNotFound) {
		return Learning{}, nil, notLearned(sandbox)
	} else if err != nil {
		return Learning{}, nil, err
	}
	learned, err := p.opts.Store.NetLearnedOf(ctx, sb.ID)
	if err != nil {
		return Learning{}, nil, err
	}
	out := Learning{Sandbox: sb.Name, Active: w.Until.After(time.Now()), Since: rfc3339(w.StartedAt), Until: rfc3339(w.Until),
		Destinations: len(learned), Dropped: w.Dropped}
	for _, d := range learned {
		out.Requests += d.Count
	}
	return out, learned, nil
}

// Learnings lists the sandboxes learning now.
func (p *Rules) Learnings(ctx context.Context) ([]Learning, error) {
	all, err := p.opts.Store.NetLearnings(ctx)
	if err != nil {
		return nil, err
	}
	sbs, err := p.opts.Store.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, sb := range sbs {
		names[sb.ID] = sb.Name
	}
	out := []Learning{}
	now := time.Now()
	for _, w := range all {
		if name, ok := names[w.SandboxID]; ok && w.Until.After(now) {
			out = append(out, Learning{Sandbox: name, Active: true, Since: rfc3339(w.StartedAt), Until: rfc3339(w.Until), Dropped: w.Dropped})
		}
	}
	return out, nil
}

func notLearned(sandbox string) error {
	return apperr.NotFound(fmt.Sprintf("run `paddock net learn %s` first, then use the sandbox as usual", sandbox),
		"sandbox %s has not been in learn mode", sandbox)
}

func rfc3339(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// addOnce appends s to list unless it is there or list holds limit items.
func addOnce(list []string, s string, limit int) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	if len(list) >= limit {
		return list
	}
	return append(list, s)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
