package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzParsePattern checks that whatever a user types as an allowlist pattern is either
// refused or stored in a canonical form that parses back to itself, and that the stored
// rule opens what it names and nothing beside it: the host itself (for a wildcard, its
// subdomains and not the domain), however the sandbox spells it.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{
		"example.com", "*.example.com", "Example.COM.", "example.com:8080", "127.0.0.1", "127.0.0.1:8080",
		"[::1]:9000", "::1", "::ffff:10.0.0.1", "*.*.example.com", "ex*ample.com", "https://example.com/x",
		"user@example.com", "example.com:0", "example.com:65536", "example.com:+80", "[example.com]", "*.1.2.3.4",
		"0x7f.1", "2130706433", "a..b", "-a.com", "a_b.example.com", "fe80::1%eth0", " example.com ", "*.", "*",
		"xn--bcher-kva.example", "localhost:8080", "[::1", "[::1]x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePattern(s)
		if _, perr := ParsePattern(s); (perr == nil) != (err == nil) {
			t.Fatalf("ParsePattern and parsePattern disagree on %q", s)
		}
		if err != nil {
			return
		}
		canon := p.String()
		again, err := parsePattern(canon)
		if err != nil || again != p || again.String() != canon {
			t.Fatalf("%q is stored as %q, which parses to %+v (%v), want %+v", s, canon, again, err, p)
		}
		if canon != strings.ToLower(canon) || strings.Count(canon, "*") > 1 || strings.Contains(canon, "*") && !strings.HasPrefix(canon, "*.") {
			t.Fatalf("%q is stored as %q: not lowercase with at most a leading \"*.\"", s, canon)
		}
		policy := Policy{Sandbox: []Rule{{Pattern: s, Action: Allow}}}
		port := p.port
		if port == 0 {
			port = 443
		}
		for _, spelling := range []func(string) string{
			func(h string) string { return h },
			asciiUpper,
			func(h string) string { return h + "." },
		} {
			host := p.host
			if p.wildcard {
				host = "sub." + p.host
				if d := policy.Decide(spelling(p.host), port); d.Allowed {
					t.Fatalf("the wildcard %q opens its own domain %q", canon, spelling(p.host))
				}
			}
			if p.ip && strings.Contains(host, ":") {
				host = "[" + host + "]"
			}
			if _, _, err := canonicalHost(host); err != nil {
				continue // "sub." made the name too long
			}
			if d := policy.Decide(spelling(host), port); !d.Allowed {
				t.Fatalf("%q does not open %q port %d: %s", canon, spelling(host), port, d.Reason)
			}
			if d := policy.Decide(spelling("x"+host), port); d.Allowed && !p.wildcard {
				t.Fatalf("%q opens %q", canon, spelling("x"+host))
			}
		}
		if d := policy.Decide(p.host, 1234); d.Allowed && p.port != 1234 && !p.wildcard {
			t.Fatalf("%q opens port 1234 of %q", canon, p.host)
		}
	})
}

// FuzzDecide asks a policy built like a real one (the defaults, global and sandbox rules
// of both kinds) about arbitrary destinations. A destination is allowed only by a rule
// that matches it, never by a wildcard or a default when it is an IP address, never past
// a deny rule naming it exactly, and the answer does not depend on how the host is
// spelled (case, trailing dot, IPv4-mapped IPv6).
func FuzzDecide(f *testing.F) {
	for _, s := range []string{
		"github.com", "GitHub.com.", "api.github.com", "github.com.evil.com", "evilgithub.com", "127.0.0.1",
		"::ffff:127.0.0.1", "[::1]", "169.254.169.254", "10.0.0.1", "denied.example.com", "x.denied.example.com",
		"registry.npmjs.org", "2130706433", "0x7f000001", "localhost", "", ".", "a..b", "[::ffff:10.0.0.1]",
	} {
		f.Add(s, 443)
		f.Add(s, 80)
		f.Add(s, 8080)
	}
	policy := Policy{
		Defaults: DefaultAllowlist([]string{"claude", "codex"}),
		Global:   []Rule{{Pattern: "*.example.com", Action: Allow}, {Pattern: "10.0.0.1:8080", Action: Allow}},
		Sandbox: []Rule{
			{Pattern: "denied.example.com", Action: Deny}, {Pattern: "*.github.com", Action: Deny},
			{Pattern: "api.github.com", Action: Allow}, {Pattern: "localhost:8080", Action: Allow},
		},
	}
	if err := policy.Validate(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host string, port int) {
		d := policy.Decide(host, port)
		for _, other := range []string{asciiUpper(host), host + "."} {
			if strings.HasSuffix(host, ".") || strings.HasPrefix(host, "[") {
				break
			}
			if od := policy.Decide(other, port); od.Allowed != d.Allowed || od.Rule != d.Rule {
				t.Fatalf("%q and %q get different answers: %+v and %+v", host, other, d, od)
			}
		}
		if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
			mapped := netip.AddrFrom16(a.As16()).String()
			if od := policy.Decide(mapped, port); od.Allowed != d.Allowed {
				t.Fatalf("%q and %q get different answers: %+v and %+v", host, mapped, d, od)
			}
		}
		if !d.Allowed {
			return
		}
		h, isIP, err := canonicalHost(host)
		if err != nil {
			t.Fatalf("%q is allowed though it is not a host: %v", host, err)
		}
		rule, err := parsePattern(d.Rule)
		if err != nil || !rule.matches(h, isIP, port) {
			t.Fatalf("%q:%d is allowed by %q, which does not match it", host, port, d.Rule)
		}
		if rule.wildcard {
			if isIP || !strings.HasSuffix(h, "."+rule.host) {
				t.Fatalf("%q:%d is allowed by the wildcard %q", host, port, d.Rule)
			}
		} else if h != rule.host {
			t.Fatalf("%q:%d (%s) is allowed by %q", host, port, h, d.Rule)
		}
		if isIP && (!d.Explicit || d.Scope == ScopeDefault) {
			t.Fatalf("the IP address %q is allowed by %q (%s) without an explicit rule", host, d.Rule, d.Scope)
		}
		if h == "denied.example.com" {
			t.Fatalf("%q is allowed past the rule that denies it", host)
		}
	})
}

// asciiUpper upper-cases ASCII letters only: Unicode case mapping turns some non-ASCII
// letters into ASCII ones ("ſ" into "S"), which names another host.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
