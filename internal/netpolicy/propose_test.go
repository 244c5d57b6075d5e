package netpolicy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/proxy/egress"
	"github.com/paddockhq/paddock/internal/store"
)

// diff renders a proposal's lines as `paddock net propose` orders them.
func diff(p Proposal) string {
	var b strings.Builder
	for _, l := range p.Lines {
		fmt.Fprintf(&b, "%s %s %s %s %d\n", l.Op, l.Action, l.Pattern, l.Scope, l.Requests)
	}
	return b.String()
}

func TestPropose(t *testing.T) {
	pol := egress.Policy{
		Defaults: []string{"github.com", "registry.npmjs.org"},
		Global:   []egress.Rule{{Pattern: "tracker.bad.example", Action: egress.Deny, Scope: "global"}},
		Sandbox:  []egress.Rule{{Pattern: "old.example.net", Action: egress.Allow, Scope: "box"}},
	}
	rules := []Rule{
		{Pattern: "github.com", Action: "allow", Scope: "default"},
		{Pattern: "registry.npmjs.org", Action: "allow", Scope: "default"},
		{Pattern: "tracker.bad.example", Action: "deny", Scope: "global"},
		{Pattern: "old.example.net", Action: "allow", Scope: "box"},
	}
	t0 := time.Now()
	dest := func(host string, port, n, refused int, reason string) store.NetLearned {
		return store.NetLearned{Host: host, Port: port, Count: n, Refused: refused, Reason: reason, FirstSeen: t0, LastSeen: t0}
	}
	notAllowed := "not on the allowlist"
	learned := []store.NetLearned{
		dest("github.com", 443, 5, 0, ""),
		// three subdomains of one registrable domain: one wildcard
		dest("a.cdn.example.org", 443, 1, 1, notAllowed),
		dest("b.cdn.example.org", 443, 2, 2, notAllowed),
		dest("c.example.org", 80, 1, 1, notAllowed),
		// two of another: each host
		dest("one.example.com", 443, 1, 1, notAllowed),
		dest("two.example.com", 443, 1, 1, notAllowed),
		// a public suffix's hosts are each registrable: never *.github.io
		dest("x.github.io", 443, 1, 1, notAllowed),
		dest("y.github.io", 443, 1, 1, notAllowed),
		dest("z.github.io", 443, 1, 1, notAllowed),
		// off the web ports: host:port
		dest("localhost", 8080, 3, 3, notAllowed),
		// a deny rule's refusal stays refused, and no wildcard covers its domain
		dest("tracker.bad.example", 443, 4, 4, "denied by rule tracker.bad.example (global)"),
		dest("p.bad.example", 443, 1, 1, notAllowed),
		dest("q.bad.example", 443, 1, 1, notAllowed),
		dest("r.bad.example", 443, 1, 1, notAllowed),
		// a name carrying data (an alarm's finding) is never proposed, nor counted
		// towards a wildcard over its domain
		dest("deadbeefcafebabe0123456789abcdef0123456789abcdef.example.com", 80, 1, 1, notAllowed),
	}
	prop := propose(Learning{Sandbox: "box"}, "box", pol, rules, learned, false)
	if len(prop.Suspect) != 1 || !strings.HasPrefix(prop.Suspect[0].Host, "deadbeef") || !strings.Contains(prop.Suspect[0].Reason, "carries data") {
		t.Errorf("suspect destinations %+v, want the hex-named host, saying why", prop.Suspect)
	}
	got := diff(prop)
	want := `  allow github.com default 5
  allow registry.npmjs.org default 0
  deny tracker.bad.example global 4
  allow old.example.net box 0
+ allow *.example.org box 4
+ allow localhost:8080 box 3
+ allow one.example.com box 1
+ allow p.bad.example box 1
+ allow q.bad.example box 1
+ allow r.bad.example box 1
+ allow two.example.com box 1
+ allow x.github.io box 1
+ allow y.github.io box 1
+ allow z.github.io box 1
`
	if got != want {
		t.Errorf("proposal:\n%s\nwant:\n%s", got, want)
	}

	// Pruning marks the sandbox's own allow rules never used, and no other.
	got = diff(propose(Learning{Sandbox: "box"}, "box", pol, rules, learned[:1], true))
	want = `  allow github.com default 5
  allow registry.npmjs.org default 0
  deny tracker.bad.example global 0
- allow old.example.net box 0
`
	if got != want {
		t.Errorf("pruned proposal:\n%s\nwant:\n%s", got, want)
	}
}
