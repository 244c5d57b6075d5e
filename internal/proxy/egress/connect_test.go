package egress_test

import (
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/proxy/egress"
)

// TestConnectAdmission drives CONNECT requests through the proxy and checks who gets through, what a
// refused sandbox is told, and that no refused destination is resolved or dialled.
func TestConnectAdmission(t *testing.T) {
	echo := startEcho(t)
	_, echoPort, _ := net.SplitHostPort(echo)

	fn := newFakeNet(t)
	fn.name("allowed.test", "203.0.113.10")
	fn.name("evil.test", "10.0.0.1")
	fn.name("metadata.test", "169.254.169.254")
	fn.name("local.test", "127.0.0.1")
	fn.name("cgnat.test", "100.64.0.7")
	fn.name("ula.test", "fd00::1")
	fn.name("mapped.test", "::ffff:192.168.1.1")
	fn.name("nat64.test", "64:ff9b::a00:1") // 10.0.0.1 through NAT64
	fn.name("mixed.test", "203.0.113.10", "10.0.0.1")
	fn.name("rebind.test", "10.0.0.1")
	fn.name("multi.test", "203.0.113.99", "203.0.113.10") // the first address refuses
	fn.name("dead.test", "203.0.113.99")
	fn.route("203.0.113.10:443", echo)
	fn.route("10.0.0.1:443", echo)
	e := startProxy(t, fn)

	wildcard := egress.Policy{Global: []egress.Rule{allow("*.test", "global")}}
	tests := []struct {
		name       string
		policy     egress.Policy
		target     string
		wantStatus int
		wantBody   []string // substrings of a refusal
		wantLooked []string
		wantDialed []string
	}{
		{name: "allowed by a wildcard", policy: wildcard, target: "allowed.test:443", wantStatus: 200,
			wantLooked: []string{"allowed.test"}, wantDialed: []string{"203.0.113.10:443"}},
		{name: "host written in capitals with a trailing dot", policy: wildcard, target: "Allowed.TEST.:443", wantStatus: 200,
			wantLooked: []string{"allowed.test"}, wantDialed: []string{"203.0.113.10:443"}},
		{name: "not on the allowlist", policy: egress.Policy{}, target: "allowed.test:443", wantStatus: 403,
			wantBody: []string{"paddock: egress to allowed.test:443 is not allowed for sandbox myrepo (not on the allowlist); allow it with: paddock net allow allowed.test --sandbox myrepo"}},
		{name: "other port gets a port in the hint", policy: wildcard, target: "allowed.test:8443", wantStatus: 403,
			wantBody: []string{"paddock net allow allowed.test:8443 --sandbox myrepo"}},
		{name: "sandbox deny beats global allow", policy: egress.Policy{Global: wildcard.Global, Sandbox: []egress.Rule{deny("allowed.test", sandbox)}},
			target: "allowed.test:443", wantStatus: 403, wantBody: []string{"denied by rule allowed.test (sandbox myrepo)"}},
		{name: "bare IP without a rule", policy: wildcard, target: "203.0.113.10:443", wantStatus: 403,
			wantBody: []string{"bare IP addresses need an explicit rule", "paddock net allow 203.0.113.10 --sandbox myrepo"}},
		{name: "bare IP allowed only by a default", policy: egress.Policy{Defaults: []string{"203.0.113.10"}}, target: "203.0.113.10:443", wantStatus: 403,
			wantBody: []string{"bare IP addresses need an explicit rule"}},
		{name: "explicit IP rule", policy: egress.Policy{Sandbox: []egress.Rule{allow("127.0.0.1:"+echoPort, sandbox)}}, target: echo, wantStatus: 200,
			wantDialed: []string{echo}},
		{name: "name resolving to 10.0.0.1", policy: wildcard, target: "evil.test:443", wantStatus: 403,
			wantBody: []string{"evil.test resolves to a private address 10.0.0.1", "paddock net allow evil.test --sandbox myrepo"}, wantLooked: []string{"evil.test"}},
		{name: "name resolving to the metadata service", policy: wildcard, target: "metadata.test:443", wantStatus: 403,
			wantBody: []string{"private address 169.254.169.254"}, wantLooked: []string{"metadata.test"}},
		{name: "name resolving to loopback", policy: wildcard, target: "local.test:443", wantStatus: 403,
			wantBody: []string{"private address 127.0.0.1"}, wantLooked: []string{"local.test"}},
		{name: "name resolving to CGNAT", policy: wildcard, target: "cgnat.test:443", wantStatus: 403,
			wantBody: []string{"private address 100.64.0.7"}, wantLooked: []string{"cgnat.test"}},
		{name: "name resolving to an IPv6 ULA", policy: wildcard, target: "ula.test:443", wantStatus: 403,
			wantBody: []string{"private address fd00::1"}, wantLooked: []string{"ula.test"}},
		{name: "name resolving to an IPv4-mapped private address", policy: wildcard, target: "mapped.test:443", wantStatus: 403,
			wantBody: []string{"private address 192.168.1.1"}, wantLooked: []string{"mapped.test"}},
		{name: "name resolving to a private address through NAT64", policy: wildcard, target: "nat64.test:443", wantStatus: 403,
			wantBody: []string{"private address 64:ff9b::a00:1"}, wantLooked: []string{"nat64.test"}},
		{name: "one private address among public ones", policy: wildcard, target: "mixed.test:443", wantStatus: 403,
			wantBody: []string{"private address 10.0.0.1"}, wantLooked: []string{"mixed.test"}},
		{name: "wildcard allow does not open private addresses", policy: egress.Policy{Sandbox: []egress.Rule{allow("*.test", sandbox)}}, target: "rebind.test:443", wantStatus: 403,
			wantBody: []string{"private address 10.0.0.1"}, wantLooked: []string{"rebind.test"}},
		{name: "explicit rule opens a private address", policy: egress.Policy{Global: []egress.Rule{allow("rebind.test", "global")}}, target: "rebind.test:443", wantStatus: 200,
			wantLooked: []string{"rebind.test"}, wantDialed: []string{"10.0.0.1:443"}},
		{name: "addresses tried in order", policy: wildcard, target: "multi.test:443", wantStatus: 200,
			wantLooked: []string{"multi.test"}, wantDialed: []string{"203.0.113.99:443", "203.0.113.10:443"}},
		{name: "resolution failure", policy: wildcard, target: "nx.test:443", wantStatus: 502,
			wantBody: []string{"cannot resolve nx.test"}, wantLooked: []string{"nx.test"}},
		{name: "dial failure", policy: wildcard, target: "dead.test:443", wantStatus: 502,
			wantBody: []string{"cannot reach dead.test:443"}, wantLooked: []string{"dead.test"}, wantDialed: []string{"203.0.113.99:443"}},
		{name: "no port", policy: wildcard, target: "allowed.test", wantStatus: 400, wantBody: []string{"CONNECT needs host:port"}},
		{name: "port zero", policy: wildcard, target: "allowed.test:0", wantStatus: 400, wantBody: []string{"between 1 and 65535"}},
		{name: "bad host", policy: wildcard, target: "bad!host.test:443", wantStatus: 400, wantBody: []string{"bad CONNECT host"}},
		{name: "numeric host that is not an IP", policy: wildcard, target: "2130706433:443", wantStatus: 400, wantBody: []string{"looks numeric"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.rules.set(tt.policy)
			looked0, dialed0 := fn.calls()
			denied0 := len(e.denials.all())

			status, body, c, br := e.connect(t, tt.target, "ping")
			if status != tt.wantStatus {
				t.Fatalf("status %d (%q), want %d", status, body, tt.wantStatus)
			}
			for _, want := range tt.wantBody {
				if !strings.Contains(body, want) {
					t.Errorf("body %q does not contain %q", body, want)
				}
			}
			if status == 200 {
				echoExchange(t, c, br, "ping")
			}
			looked, dialed := fn.calls()
			if got := looked[len(looked0):]; !slices.Equal(got, tt.wantLooked) {
				t.Errorf("looked up %q, want %q", got, tt.wantLooked)
			}
			if got := dialed[len(dialed0):]; !slices.Equal(got, tt.wantDialed) {
				t.Errorf("dialled %q, want %q", got, tt.wantDialed)
			}
			newDenials := e.denials.all()[denied0:]
			if status == 403 {
				host, port, _ := net.SplitHostPort(tt.target)
				if len(newDenials) != 1 || newDenials[0].Sandbox != sandbox ||
					!strings.EqualFold(strings.TrimSuffix(host, "."), newDenials[0].Host) || port != strconv.Itoa(newDenials[0].Port) ||
					newDenials[0].Reason == "" || time.Since(newDenials[0].Time) > time.Minute {
					t.Errorf("denials recorded %+v, want one for %s in sandbox %s", newDenials, tt.target, sandbox)
				}
			} else if len(newDenials) != 0 {
				t.Errorf("denials recorded %+v for a request that was not refused", newDenials)
			}
		})
	}
}

// TestRuleChangesApplyAtOnce checks that the policy is read per request: a host allowed after a
// refusal gets through on the next request, and is refused again once the rule is gone.
func TestRuleChangesApplyAtOnce(t *testing.T) {
	fn := newFakeNet(t)
	fn.name("allowed.test", "203.0.113.10")
	fn.route("203.0.113.10:443", startEcho(t))
	e := startProxy(t, fn)

	for i, step := range []struct {
		policy egress.Policy
		want   int
	}{
		{egress.Policy{}, 403},
		{egress.Policy{Sandbox: []egress.Rule{allow("allowed.test", sandbox)}}, 200},
		{egress.Policy{Global: []egress.Rule{deny("*.test", "global")}}, 403},
	} {
		e.rules.set(step.policy)
		if status, body, _, _ := e.connect(t, "allowed.test:443", ""); status != step.want {
			t.Errorf("request %d: status %d (%q), want %d", i+1, status, body, step.want)
		}
	}
}

// TestServeStopClosesTunnels checks that stopping the proxy ends an open tunnel and that Serve
// returns.
func TestServeStopClosesTunnels(t *testing.T) {
	fn := newFakeNet(t)
	fn.name("allowed.test", "203.0.113.10")
	fn.route("203.0.113.10:443", startEcho(t))
	e := startProxy(t, fn)
	e.rules.set(egress.Policy{Global: []egress.Rule{allow("allowed.test", "global")}})

	status, body, c, br := e.connect(t, "allowed.test:443", "ping")
	if status != 200 {
		t.Fatalf("status %d (%q)", status, body)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(br, buf); err != nil {
		t.Fatal(err)
	}
	e.stop()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := br.Read(buf); err == nil {
		t.Errorf("tunnel still open after stop: read %q", buf[:n])
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Errorf("tunnel still open after stop: %v", err)
	}
	if _, err := net.Dial("tcp", e.addr); err == nil {
		t.Errorf("proxy still accepts connections after stop")
	}
}

// TestPolicyErrors checks that a sandbox whose policy cannot be read or is invalid gets no egress.
func TestPolicyErrors(t *testing.T) {
	fn := newFakeNet(t)
	fn.name("allowed.test", "203.0.113.10")
	e := startProxy(t, fn)
	e.rules.set(egress.Policy{Global: []egress.Rule{allow("*.test", "global"), {Pattern: "https://allowed.test/", Action: egress.Deny}}})
	status, body, _, _ := e.connect(t, "allowed.test:443", "")
	if status != http.StatusInternalServerError || !strings.Contains(body, "invalid") {
		t.Errorf("status %d (%q), want 500 naming the invalid policy", status, body)
	}
	if looked, dialed := fn.calls(); len(looked)+len(dialed) != 0 {
		t.Errorf("looked up %q and dialled %q under an invalid policy", looked, dialed)
	}
}
