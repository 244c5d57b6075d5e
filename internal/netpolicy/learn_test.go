package netpolicy

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/proxy/egress"
	"github.com/paddockhq/paddock/internal/store"
)

// storeSandboxes finds sandboxes in the store, as the sandbox service does.
type storeSandboxes struct{ st *store.Store }

func (s storeSandboxes) Get(ctx context.Context, name string) (store.Sandbox, error) {
	all, err := s.st.ListSandboxes(ctx)
	if err != nil {
		return store.Sandbox{}, err
	}
	for _, sb := range all {
		if sb.Name == name {
			return sb, nil
		}
	}
	return store.Sandbox{}, apperr.NotFound("", "no sandbox %q", name)
}

func (storeSandboxes) Emit(context.Context, store.Sandbox, events.Event) {}

// TestLearnIsBoundedAndSurvivesARestart: a sandbox that makes thousands of requests,
// to more destinations than are kept, leaves one row per destination (at most 1,000,
// the rest counted as dropped) with its counts; a new daemon over the same store goes on
// learning; another sandbox, not learning, leaves nothing.
func TestLearnIsBoundedAndSurvivesARestart(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, name := range []string{"box", "quiet"} {
		if err := st.CreateSandbox(ctx, store.Sandbox{ID: "id-" + name, Name: name, Backend: "bwrap", State: "running"}); err != nil {
			t.Fatal(err)
		}
	}
	p := New(Options{Store: st, Sandboxes: storeSandboxes{st}})
	if _, err := p.StartLearning(ctx, "box", time.Hour); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	req := func(sandbox, host string, allowed bool) egress.Request {
		r := egress.Request{Time: now, Sandbox: sandbox, Method: "GET", Host: host, Port: 80, Path: "/p", Allowed: allowed}
		if !allowed {
			r.Reason = "not on the allowlist"
		}
		return r
	}
	for i := range 5000 {
		p.Learn(req("box", "busy.example", i%2 == 0))
		p.Learn(req("quiet", "busy.example", true))
	}
	for i := range store.NetLearnedKept + 200 {
		p.Learn(req("box", fmt.Sprintf("h%d.example", i), false))
	}
	lr, err := p.Learning(ctx, "box")
	if err != nil {
		t.Fatal(err)
	}
	if lr.Destinations != store.NetLearnedKept || lr.Dropped != 201 || lr.Requests != 5000+store.NetLearnedKept-1 {
		t.Errorf("learned %+v, want %d destinations (busy.example and 999 others), 201 requests dropped", lr, store.NetLearnedKept)
	}
	learned, _ := st.NetLearnedOf(ctx, "id-box")
	for _, d := range learned {
		if d.Host == "busy.example" && (d.Count != 5000 || d.Refused != 2500 || len(d.Paths) != 1 || d.Methods[0] != "GET") {
			t.Errorf("busy.example learned as %+v", d)
		}
	}
	if _, err := p.Learning(ctx, "quiet"); err == nil {
		t.Error("a sandbox not learning has a learn mode")
	}

	// A new daemon: the window is read back from the store.
	p2 := New(Options{Store: st, Sandboxes: storeSandboxes{st}})
	p2.Learn(req("box", "busy.example", true))
	if err := p2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	learned, _ = st.NetLearnedOf(ctx, "id-box")
	for _, d := range learned {
		if d.Host == "busy.example" && d.Count != 5001 {
			t.Errorf("after a restart busy.example counts %d requests, want 5001", d.Count)
		}
	}
	// Stopped, it records no more.
	if _, err := p2.StopLearning(ctx, "box"); err != nil {
		t.Fatal(err)
	}
	p2.Learn(req("box", "busy.example", true))
	if lr, _ := p2.Learning(ctx, "box"); lr.Active || lr.Requests != 5000+store.NetLearnedKept {
		t.Errorf("after stop: %+v", lr)
	}
}

// BenchmarkLearn is the cost Learn adds to each request the egress proxy decides: for a
// sandbox not learning (every request of every sandbox pays it), and for one learning,
// its requests spread over 100 destinations.
func BenchmarkLearn(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "p.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for _, name := range []string{"box", "quiet"} {
		if err := st.CreateSandbox(ctx, store.Sandbox{ID: "id-" + name, Name: name, Backend: "bwrap", State: "running"}); err != nil {
			b.Fatal(err)
		}
	}
	p := New(Options{Store: st, Sandboxes: storeSandboxes{st}})
	if _, err := p.StartLearning(ctx, "box", time.Hour); err != nil {
		b.Fatal(err)
	}
	hosts := make([]string, 100)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("h%d.example", i)
	}
	for _, sb := range []string{"quiet", "box"} {
		b.Run(map[string]string{"quiet": "not-learning", "box": "learning"}[sb], func(b *testing.B) {
			i := 0
			for b.Loop() {
				p.Learn(egress.Request{Time: time.Now(), Sandbox: sb, Method: "GET", Host: hosts[i%100], Port: 80, Path: "/x", Allowed: true})
				i++
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}
