package metering

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/proxy/creds"
	"github.com/paddockhq/paddock/internal/store"
)

type emitted struct {
	mu  sync.Mutex
	evs []events.Event
}

func (e *emitted) emit(_ context.Context, sb store.Sandbox, ev events.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.Sandbox = sb.Name
	e.evs = append(e.evs, ev)
}

func (e *emitted) kinds() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.evs {
		out = append(out, ev.Kind)
	}
	return out
}

func newMeter(t *testing.T, def Limit) (*Meter, *store.Store, *emitted) {
	t.Helper()
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	prices, err := NewPrices(map[string]Price{"house-model": {Input: 1, Output: 2}})
	if err != nil {
		t.Fatal(err)
	}
	e := &emitted{}
	m, err := New(t.Context(), Options{Store: st, Prices: prices, Default: def, Emit: e.emit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, st, e
}

// TestBudgetStopsAndResumes: calls go through until the sandbox's budget is spent, with
// a warning at 80%; then the next call is refused with a message naming the budget and
// the command that raises it; raised, calls go through again. A restarted meter knows
// what was spent.
func TestBudgetStopsAndResumes(t *testing.T) {
	m, st, e := newMeter(t, Limit{})
	ctx := t.Context()
	sb := store.Sandbox{ID: "sb1", Name: "repo"}
	if _, err := m.SetBudget(ctx, sb, "", Limit{Tokens: 1000}); err != nil {
		t.Fatal(err)
	}
	call := creds.Call{SandboxID: "sb1", Sandbox: "repo", Provider: "anthropic", Start: time.Now()}
	answer := creds.Answer{Status: 200, Model: "claude-sonnet-4-5", Usage: creds.Usage{Input: 250, Output: 20}, Reported: true}
	for i := range 4 {
		if r := m.Admit(ctx, call); r != nil {
			t.Fatalf("call %d refused: %s", i, r.Message)
		}
		m.Record(call, answer) // 270 tokens each: 27%, 54%, 81%, 108%
	}
	r := m.Admit(ctx, call)
	if r == nil {
		t.Fatal("a call went through a spent budget")
	}
	for _, want := range []string{"budget of sandbox repo is spent", "1080 of 1000 tokens", "paddock budget set repo --tokens 2000"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("refusal %q does not say %q", r.Message, want)
		}
	}
	m.Flush(ctx)
	if got := strings.Join(e.kinds(), ","); got != "usage,usage,usage,budget-warning,usage,budget-spent" {
		t.Errorf("events %s", got)
	}
	if _, err := m.SetBudget(ctx, sb, "", Limit{Tokens: 2000}); err != nil {
		t.Fatal(err)
	}
	if r := m.Admit(ctx, call); r != nil {
		t.Fatalf("refused after the budget was raised: %s", r.Message)
	}

	// The state holds every call, and a new meter (a daemon restart) refuses at the same point.
	m.Flush(ctx)
	sum, err := st.SumUsage(ctx, "sb1", "")
	if err != nil || sum.Requests != 4 || sum.Total() != 1080 || sum.CostUSD <= 0 {
		t.Fatalf("stored %+v, %v", sum, err)
	}
	m2, err := New(ctx, Options{Store: st, Prices: m.opts.Prices})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if _, err := m2.SetBudget(ctx, sb, "", Limit{Tokens: 1000}); err != nil {
		t.Fatal(err)
	}
	if m2.Admit(ctx, call) == nil {
		t.Error("a restarted meter forgot what was spent")
	}
}

// TestSessionBudgetAndAttribution: a call is attributed to the session it names, or to
// the session whose conversation id it carries; a session's budget stops that session
// only; a name the sandbox has no session of is not believed.
func TestSessionBudgetAndAttribution(t *testing.T) {
	m, st, _ := newMeter(t, Limit{USD: 100})
	ctx := t.Context()
	for _, se := range []store.Session{{SandboxID: "sb1", Name: "claude", Agent: "claude", ResumeID: "uuid-1"}, {SandboxID: "sb1", Name: "codex", Agent: "codex"}} {
		if err := st.CreateSession(ctx, se); err != nil {
			t.Fatal(err)
		}
	}
	sb := store.Sandbox{ID: "sb1", Name: "repo"}
	if _, err := m.SetBudget(ctx, sb, "claude", Limit{USD: 0.01}); err != nil {
		t.Fatal(err)
	}
	byID := creds.Call{SandboxID: "sb1", Sandbox: "repo", AgentSession: "uuid-1", Start: time.Now()}
	byName := creds.Call{SandboxID: "sb1", Sandbox: "repo", Session: "codex", AgentSession: "thread-9", Start: time.Now()}
	forged := creds.Call{SandboxID: "sb1", Sandbox: "repo", Session: "nosuch", Start: time.Now()}
	// house-model: $1 per million in, $2 out: 10,000 in and 1,000 out is $0.012.
	a := creds.Answer{Status: 200, Model: "house-model", Usage: creds.Usage{Input: 10_000, Output: 1_000}, Reported: true}
	m.Record(byID, a)
	m.Record(byName, a)
	m.Record(forged, creds.Answer{Status: 200, Model: "unknown-model", Usage: creds.Usage{Input: 5}})
	if r := m.Admit(ctx, byID); r == nil || !strings.Contains(r.Message, "session repo/claude") || !strings.Contains(r.Message, "$0.01, estimated") {
		t.Errorf("the claude session's spent budget: %v", r)
	}
	if r := m.Admit(ctx, byName); r != nil {
		t.Errorf("the codex session was stopped by another's budget: %s", r.Message)
	}
	m.Flush(ctx)
	groups, err := st.UsageGroups(ctx, store.UsageQuery{Sandbox: "repo"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]store.UsageGroup{}
	for _, g := range groups {
		got[g.Session+" "+g.Model] = g
	}
	if g := got["claude house-model"]; g.Requests != 1 || g.CostUSD < 0.0119 || g.CostUSD > 0.0121 {
		t.Errorf("claude's usage %+v", g)
	}
	if g := got["codex house-model"]; g.Requests != 1 {
		t.Errorf("codex's usage %+v (groups %+v)", g, groups)
	}
	if g := got[" unknown-model"]; g.Requests != 1 || g.Unpriced != 1 || g.CostUSD != 0 {
		t.Errorf("the forged session's call %+v: want it in no session, unpriced", g)
	}
}

// TestLaterLearntConversationID: a call whose conversation id no session has yet (Codex's
// first turn) is counted for the session once its id is learnt.
func TestLaterLearntConversationID(t *testing.T) {
	m, st, _ := newMeter(t, Limit{})
	ctx := t.Context()
	if err := st.CreateSession(ctx, store.Session{SandboxID: "sb1", Name: "codex", Agent: "codex"}); err != nil {
		t.Fatal(err)
	}
	m.Record(creds.Call{SandboxID: "sb1", Sandbox: "repo", AgentSession: "thread-1", Start: time.Now()},
		creds.Answer{Status: 200, Model: "gpt-5", Usage: creds.Usage{Input: 10}, Reported: true})
	m.Flush(ctx)
	if err := st.SetResumeID(ctx, "sb1", "codex", "thread-1"); err != nil {
		t.Fatal(err)
	}
	groups, err := st.UsageGroups(ctx, store.UsageQuery{Sandbox: "repo", Session: "codex"})
	if err != nil || len(groups) != 1 || groups[0].InputTokens != 10 {
		t.Errorf("groups %+v, %v", groups, err)
	}
}

// TestPrices: a model takes the price of the longest prefix that has one; the config's
// prices override the defaults; a provider's prefix on the name is ignored.
func TestPrices(t *testing.T) {
	p, err := NewPrices(map[string]Price{"claude-sonnet-4-5": {Input: 9}})
	if err != nil {
		t.Fatal(err)
	}
	for model, want := range map[string]float64{
		"claude-sonnet-4-5-20250929": 9, "claude-sonnet-4-20250514": 3, "gpt-5-mini-2025-08-07": 0.25, "gpt-5.5": 1.25,
		"models/gemini-2.5-pro": 1.25, "anthropic/claude-haiku-4-5": 1,
	} {
		if got, ok := p.Of(model); !ok || got.Input != want {
			t.Errorf("%s: input price %v (%v), want %v", model, got.Input, ok, want)
		}
	}
	if _, ok := p.Of("llama-3-70b"); ok {
		t.Error("an unknown model has a price")
	}
	if _, err := NewPrices(map[string]Price{"x": {Output: -1}}); err == nil {
		t.Error("a negative price was accepted")
	}
}
