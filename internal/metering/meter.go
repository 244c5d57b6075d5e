package metering

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/config/cost"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/proxy/creds"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/transcript"
)

// Event kinds the meter emits.
const (
	// EventUsage is one model call and what it used.
	EventUsage = "usage"
	// EventBudgetWarning says a budget is 80% spent.
	EventBudgetWarning = "budget-warning"
	// EventBudgetSpent says a budget is spent: the next model calls are refused.
	EventBudgetSpent = "budget-spent"
)

// WarnAt is the share of a budget at which the meter warns.
const WarnAt = 0.8

// Limit bounds spending: estimated US dollars and/or tokens (0: no bound of the kind).
type Limit = cost.Limit

// share is how much of l spent is: the larger of the dollars' and the tokens' shares.
func share(l Limit, spent store.UsageSum) float64 {
	var s float64
	if l.USD > 0 {
		s = spent.CostUSD / l.USD
	}
	if l.Tokens > 0 {
		s = max(s, float64(spent.Total())/float64(l.Tokens))
	}
	return s
}

// Options configure a Meter.
type Options struct {
	Store  *store.Store
	Prices Prices
	// Default is every sandbox's budget when it has none of its own.
	Default Limit
	// Emit records and publishes an event of a sandbox (sandbox.Service.Emit).
	Emit   func(ctx context.Context, sb store.Sandbox, ev events.Event)
	Logger *slog.Logger
}

// Meter implements creds.Meter: it keeps each sandbox's spending in memory (read from
// the state the first time the sandbox calls a model), checks budgets there, and
// writes each call and its events to the state from a goroutine of its own, so that
// no model call waits on the disk.
type Meter struct {
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	sandboxes map[string]*spending // by sandbox id
	budgets   map[string]map[string]Limit

	queue  chan job
	done   chan struct{}
	qmu    sync.RWMutex // held to send on queue (read) and to close it (write)
	closed bool
}

var _ creds.Meter = (*Meter)(nil)

// spending is what one sandbox, and each of its sessions, spent.
type spending struct {
	spent    map[string]*store.UsageSum // by session; "" is the whole sandbox
	sessions map[string]sessionName     // claimed names and agents' conversation ids, checked
}

type sessionName struct {
	name    string
	checked time.Time
}

// An agent's conversation id that names no session yet is looked up again after this
// long: Codex's is learnt from its first turn's hook.
const recheckAfter = 5 * time.Second

type job struct {
	call   *store.MeteredCall
	events []events.Event
	sb     store.Sandbox
	flush  chan struct{}
}

// New returns a meter whose writer runs until Close.
func New(ctx context.Context, opts Options) (*Meter, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Meter{opts: opts, log: opts.Logger, sandboxes: map[string]*spending{}, budgets: map[string]map[string]Limit{},
		queue: make(chan job, 4096), done: make(chan struct{})}
	list, err := opts.Store.Budgets(ctx)
	if err != nil {
		return nil, fmt.Errorf("read budgets: %w", err)
	}
	for _, b := range list {
		m.setLimit(b.SandboxID, b.Session, Limit{USD: b.USD, Tokens: b.Tokens})
	}
	go m.write()
	return m, nil
}

// Close writes what is queued and stops the writer.
func (m *Meter) Close() {
	m.qmu.Lock()
	if !m.closed {
		m.closed = true
		close(m.queue)
	}
	m.qmu.Unlock()
	<-m.done
}

// enqueue hands j to the writer; after Close, j is dropped.
func (m *Meter) enqueue(j job) bool {
	m.qmu.RLock()
	defer m.qmu.RUnlock()
	if m.closed {
		return false
	}
	m.queue <- j
	return true
}

// Calls are written in batches: what came within batchWait of the first, up to
// batchMax; a Flush writes at once.
const (
	batchWait = 100 * time.Millisecond
	batchMax  = 256
)

func (m *Meter) write() {
	defer close(m.done)
	for j := range m.queue {
		batch := []job{j}
		timer := time.NewTimer(batchWait)
	collect:
		for len(batch) < batchMax && j.flush == nil {
			select {
			case j = <-m.queue:
				if j.call == nil && j.flush == nil {
					break collect // the queue was closed
				}
				batch = append(batch, j)
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		m.writeBatch(batch)
	}
}

// writeBatch records a batch's calls in one transaction, then emits their events and
// answers the flushes, in order.
func (m *Meter) writeBatch(batch []job) {
	ctx := context.Background()
	var calls []store.MeteredCall
	for _, j := range batch {
		if j.call != nil {
			calls = append(calls, *j.call)
		}
	}
	if len(calls) > 0 {
		if err := m.opts.Store.AddMeteredCalls(ctx, calls); err != nil {
			m.log.Error("record model calls", "calls", len(calls), "err", err)
		}
	}
	for _, j := range batch {
		if m.opts.Emit != nil {
			for _, ev := range j.events {
				m.opts.Emit(ctx, j.sb, ev)
			}
		}
		if j.flush != nil {
			close(j.flush)
		}
	}
}

// Flush waits until every call recorded so far is in the state.
func (m *Meter) Flush(ctx context.Context) error {
	ch := make(chan struct{})
	if !m.enqueue(job{flush: ch}) {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Meter) setLimit(sandboxID, session string, l Limit) {
	if l.None() {
		delete(m.budgets[sandboxID], session)
		return
	}
	if m.budgets[sandboxID] == nil {
		m.budgets[sandboxID] = map[string]Limit{}
	}
	m.budgets[sandboxID][session] = l
}

// limit is the budget of a sandbox (session "") or session, and whether it is the
// config's default.
func (m *Meter) limit(sandboxID, session string) (Limit, bool) {
	if l, ok := m.budgets[sandboxID][session]; ok {
		return l, false
	}
	if session == "" {
		return m.opts.Default, true
	}
	return Limit{}, false
}

// state returns the spending of a sandbox, under m.mu.
func (m *Meter) state(sandboxID string) *spending {
	sp := m.sandboxes[sandboxID]
	if sp == nil {
		sp = &spending{spent: map[string]*store.UsageSum{}, sessions: map[string]sessionName{}}
		m.sandboxes[sandboxID] = sp
	}
	return sp
}

// spentLocked is what a sandbox or session spent, read from the state the first time.
func (m *Meter) spentLocked(ctx context.Context, sandboxID, session string) *store.UsageSum {
	sp := m.state(sandboxID)
	if s := sp.spent[session]; s != nil {
		return s
	}
	sum, err := m.opts.Store.SumUsage(ctx, sandboxID, session)
	if err != nil {
		m.log.Warn("read what a sandbox spent", "sandbox", sandboxID, "session", session, "err", err)
	}
	sp.spent[session] = &sum
	return &sum
}

// session finds which of paddock's sessions a call comes from, under m.mu: the one it
// names when the sandbox has it, else the one whose conversation id it carries.
func (m *Meter) session(ctx context.Context, c creds.Call) string {
	sp := m.state(c.SandboxID)
	look := func(key string, find func() (store.Session, error)) (string, bool) {
		if n, ok := sp.sessions[key]; ok && (n.name != "" || time.Since(n.checked) < recheckAfter) {
			return n.name, n.name != ""
		}
		se, err := find()
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			m.log.Warn("find a model call's session", "sandbox", c.Sandbox, "err", err)
		}
		sp.sessions[key] = sessionName{name: se.Name, checked: time.Now()}
		return se.Name, se.Name != ""
	}
	if c.Session != "" {
		if name, ok := look("name:"+c.Session, func() (store.Session, error) {
			return m.opts.Store.GetSession(ctx, c.SandboxID, c.Session)
		}); ok {
			return name
		}
	}
	if c.AgentSession != "" {
		name, _ := look("id:"+c.AgentSession, func() (store.Session, error) {
			return m.opts.Store.SessionByResumeID(ctx, c.SandboxID, c.AgentSession)
		})
		return name
	}
	return ""
}

// Admit refuses a call when its sandbox's or its session's budget is spent.
func (m *Meter) Admit(ctx context.Context, c creds.Call) *creds.Refusal {
	m.mu.Lock()
	defer m.mu.Unlock()
	session := m.session(ctx, c)
	for _, key := range uniq("", session) {
		l, _ := m.limit(c.SandboxID, key)
		if l.None() {
			continue
		}
		if spent := m.spentLocked(ctx, c.SandboxID, key); share(l, *spent) >= 1 {
			return &creds.Refusal{Message: spentMessage(c.Sandbox, key, l, *spent)}
		}
	}
	return nil
}

// Record adds a call to its sandbox's and session's spending, and queues it and the
// events it causes for the state.
func (m *Meter) Record(c creds.Call, a creds.Answer) {
	ctx := context.Background()
	u := transcript.Usage{InputTokens: a.Input, OutputTokens: a.Output, CacheReadTokens: a.CacheRead, CacheWriteTokens: a.CacheWrite}
	price, priced := m.opts.Prices.Of(a.Model)
	cost := costOf(price, u)
	sum := store.UsageSum{Requests: 1, Usage: u, CostUSD: cost}
	if !priced {
		sum.Unpriced = 1
	}
	m.mu.Lock()
	session := m.session(ctx, c)
	var evs []events.Event
	for _, key := range uniq("", session) {
		spent := m.spentLocked(ctx, c.SandboxID, key)
		l, _ := m.limit(c.SandboxID, key)
		before := share(l, *spent)
		spent.Add(sum)
		if l.None() {
			continue
		}
		after := share(l, *spent)
		switch {
		case before < 1 && after >= 1:
			evs = append(evs, budgetEvent(EventBudgetSpent, c.Sandbox, key, l, *spent))
		case before < WarnAt && after >= WarnAt:
			evs = append(evs, budgetEvent(EventBudgetWarning, c.Sandbox, key, l, *spent))
		}
	}
	m.mu.Unlock()
	row := &store.MeteredCall{Time: c.Start, SandboxID: c.SandboxID, Sandbox: c.Sandbox, Session: session, AgentSession: c.AgentSession,
		Provider: c.Provider, Model: a.Model, Status: a.Status, Usage: u, CostUSD: cost, Priced: priced, Duration: c.Duration}
	usage := events.Event{Kind: EventUsage, Session: session, Detail: usageDetail(a.Model, u, cost, priced),
		Attrs: map[string]string{"provider": c.Provider, "model": a.Model, "status": fmt.Sprint(a.Status),
			"input_tokens": fmt.Sprint(u.InputTokens), "output_tokens": fmt.Sprint(u.OutputTokens),
			"cache_read_tokens": fmt.Sprint(u.CacheReadTokens), "cache_write_tokens": fmt.Sprint(u.CacheWriteTokens),
			"cost_usd": fmt.Sprintf("%.6f", cost), "estimate": "true", "duration_ms": fmt.Sprint(c.Duration.Milliseconds())}}
	if !priced {
		usage.Attrs["priced"] = "false"
	}
	m.enqueue(job{call: row, events: append([]events.Event{usage}, evs...), sb: store.Sandbox{ID: c.SandboxID, Name: c.Sandbox}})
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// Budget is wire.Budget.
type Budget = wire.Budget

// SetBudget sets the budget of sandbox sb (session "") or of one of its sessions; a
// limit with no bound removes it (a sandbox then has the config's default again).
func (m *Meter) SetBudget(ctx context.Context, sb store.Sandbox, session string, l Limit) (Budget, error) {
	if l.USD < 0 || l.Tokens < 0 {
		return Budget{}, errors.New("a budget cannot be negative")
	}
	if err := m.opts.Store.SetBudget(ctx, store.Budget{SandboxID: sb.ID, Session: session, USD: l.USD, Tokens: l.Tokens}); err != nil {
		return Budget{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLimit(sb.ID, session, l)
	eff, def := m.limit(sb.ID, session)
	return Budget{Sandbox: sb.Name, Session: session, Limit: eff, Default: def, Spent: *m.spentLocked(ctx, sb.ID, session)}, nil
}

// Budgets lists the budgets of the sandboxes given: each sandbox's own or the default,
// and its sessions' own.
func (m *Meter) Budgets(ctx context.Context, sandboxes []store.Sandbox) []Budget {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Budget
	for _, sb := range sandboxes {
		if l, def := m.limit(sb.ID, ""); !l.None() {
			out = append(out, Budget{Sandbox: sb.Name, Limit: l, Default: def, Spent: *m.spentLocked(ctx, sb.ID, "")})
		}
		for session, l := range m.budgets[sb.ID] {
			if session != "" {
				out = append(out, Budget{Sandbox: sb.Name, Session: session, Limit: l, Spent: *m.spentLocked(ctx, sb.ID, session)})
			}
		}
	}
	return out
}

// Default is the config's budget for every sandbox without one.
func (m *Meter) Default() Limit { return m.opts.Default }

// Forget drops what the meter keeps in memory of a removed sandbox.
func (m *Meter) Forget(sandboxID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sandboxes, sandboxID)
	delete(m.budgets, sandboxID)
}

func target(sandbox, session string) string {
	if session == "" {
		return sandbox
	}
	return sandbox + "/" + session
}

func whose(sandbox, session string) string {
	if session == "" {
		return "sandbox " + sandbox
	}
	return "session " + sandbox + "/" + session
}

// spentMessage tells the agent (and through it the user) that a budget is spent and
// how to raise it.
func spentMessage(sandbox, session string, l Limit, spent store.UsageSum) string {
	var of, raise string
	if l.USD > 0 && spent.CostUSD >= l.USD {
		of = fmt.Sprintf("$%.2f of $%.2f, estimated", spent.CostUSD, l.USD)
		raise = fmt.Sprintf("--usd %s", roundUp(l.USD*2))
	} else {
		of = fmt.Sprintf("%d of %d tokens", spent.Total(), l.Tokens)
		raise = fmt.Sprintf("--tokens %d", l.Tokens*2)
	}
	return fmt.Sprintf("paddock: the budget of %s is spent (%s); raise it with `paddock budget set %s %s`",
		whose(sandbox, session), of, target(sandbox, session), raise)
}

func roundUp(usd float64) string {
	if usd == float64(int64(usd)) {
		return fmt.Sprint(int64(usd))
	}
	return fmt.Sprintf("%.2f", usd)
}

func budgetEvent(kind, sandbox, session string, l Limit, spent store.UsageSum) events.Event {
	detail := fmt.Sprintf("%s has spent %.0f%% of its budget", whose(sandbox, session), 100*share(l, spent))
	if kind == EventBudgetSpent {
		detail = spentMessage(sandbox, session, l, spent)
	}
	return events.Event{Kind: kind, Session: session, Detail: detail, Attrs: map[string]string{
		"usd": fmt.Sprint(l.USD), "tokens": fmt.Sprint(l.Tokens), "spent_usd": fmt.Sprintf("%.6f", spent.CostUSD),
		"spent_tokens": fmt.Sprint(spent.Total()), "estimate": "true"}}
}

func usageDetail(model string, u transcript.Usage, cost float64, priced bool) string {
	if model == "" {
		model = "unknown model"
	}
	c := "no price known"
	if priced {
		c = fmt.Sprintf("~$%.4f estimated", cost)
	}
	return fmt.Sprintf("%s: %d in, %d out, %d cache read, %d cache write (%s)", model, u.InputTokens, u.OutputTokens,
		u.CacheReadTokens, u.CacheWriteTokens, c)
}
