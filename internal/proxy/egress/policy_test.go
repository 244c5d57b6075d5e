package egress_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/proxy/egress"
)

func allow(p, scope string) egress.Rule {
	return egress.Rule{Pattern: p, Action: egress.Allow, Scope: scope}
}
func deny(p, scope string) egress.Rule {
	return egress.Rule{Pattern: p, Action: egress.Deny, Scope: scope}
}

func TestDecide(t *testing.T) {
	defaults := egress.Policy{Defaults: egress.DefaultAllowlist([]string{"api.anthropic.com"})}
	tests := []struct {
		name   string
		policy egress.Policy
		host   string
		port   int
		want   egress.Decision
	}{
		{"default host on 443", defaults, "api.anthropic.com", 443,
			egress.Decision{Allowed: true, Rule: "api.anthropic.com", Scope: "default"}},
		{"default host on 80", defaults, "registry.npmjs.org", 80,
			egress.Decision{Allowed: true, Rule: "registry.npmjs.org", Scope: "default"}},
		{"default host on another port", defaults, "api.anthropic.com", 8443,
			egress.Decision{Reason: "not on the allowlist"}},
		{"other agent's provider is not a claude default", defaults, "api.openai.com", 443,
			egress.Decision{Reason: "not on the allowlist"}},
		{"nothing matches", egress.Policy{}, "example.com", 443,
			egress.Decision{Reason: "not on the allowlist"}},
		{"case and trailing dot ignored", defaults, "API.Anthropic.COM.", 443,
			egress.Decision{Allowed: true, Rule: "api.anthropic.com", Scope: "default"}},
		{"rule written in capitals", egress.Policy{Global: []egress.Rule{allow("Example.COM.", "global")}}, "example.com", 443,
			egress.Decision{Allowed: true, Rule: "example.com", Scope: "global", Explicit: true}},
		{"wildcard matches a subdomain", egress.Policy{Global: []egress.Rule{allow("*.example.com", "global")}}, "a.b.example.com", 443,
			egress.Decision{Allowed: true, Rule: "*.example.com", Scope: "global"}},
		{"wildcard does not match the domain itself", egress.Policy{Global: []egress.Rule{allow("*.example.com", "global")}}, "example.com", 443,
			egress.Decision{Reason: "not on the allowlist"}},
		{"wildcard does not match a lookalike", egress.Policy{Global: []egress.Rule{allow("*.example.com", "global")}}, "badexample.com", 443,
			egress.Decision{Reason: "not on the allowlist"}},
		{"exact allow beats wildcard deny", egress.Policy{Global: []egress.Rule{deny("*.example.com", "global"), allow("api.example.com", "global")}}, "api.example.com", 443,
			egress.Decision{Allowed: true, Rule: "api.example.com", Scope: "global", Explicit: true}},
		{"exact deny beats wildcard allow", egress.Policy{Global: []egress.Rule{allow("*.example.com", "global"), deny("ads.example.com", "global")}}, "ads.example.com", 443,
			egress.Decision{Rule: "ads.example.com", Scope: "global", Reason: "denied by rule ads.example.com (global)"}},
		{"longer wildcard beats shorter", egress.Policy{Global: []egress.Rule{deny("*.example.com", "global"), allow("*.cdn.example.com", "global")}}, "x.cdn.example.com", 443,
			egress.Decision{Allowed: true, Rule: "*.cdn.example.com", Scope: "global"}},
		{"deny beats allow in one scope", egress.Policy{Global: []egress.Rule{allow("example.com", "global"), deny("example.com", "global")}}, "example.com", 443,
			egress.Decision{Rule: "example.com", Scope: "global", Reason: "denied by rule example.com (global)"}},
		{"global deny beats default", egress.Policy{Defaults: []string{"github.com"}, Global: []egress.Rule{deny("github.com", "global")}}, "github.com", 443,
			egress.Decision{Rule: "github.com", Scope: "global", Reason: "denied by rule github.com (global)"}},
		{"sandbox allow beats global deny", egress.Policy{Global: []egress.Rule{deny("*.example.com", "global")}, Sandbox: []egress.Rule{allow("*.example.com", "myrepo")}}, "a.example.com", 443,
			egress.Decision{Allowed: true, Rule: "*.example.com", Scope: "myrepo"}},
		{"sandbox deny beats global allow", egress.Policy{Global: []egress.Rule{allow("example.com", "global")}, Sandbox: []egress.Rule{deny("*.com", "myrepo")}}, "example.com", 443,
			egress.Decision{Rule: "*.com", Scope: "myrepo", Reason: "denied by rule *.com (sandbox myrepo)"}},
		{"sandbox deny beats default", egress.Policy{Defaults: []string{"github.com"}, Sandbox: []egress.Rule{deny("github.com", "myrepo")}}, "github.com", 443,
			egress.Decision{Rule: "github.com", Scope: "myrepo", Reason: "denied by rule github.com (sandbox myrepo)"}},
		{"port rule opens its port", egress.Policy{Global: []egress.Rule{allow("example.com:8080", "global")}}, "example.com", 8080,
			egress.Decision{Allowed: true, Rule: "example.com:8080", Scope: "global", Explicit: true}},
		{"port rule opens only its port", egress.Policy{Global: []egress.Rule{allow("example.com:8080", "global")}}, "example.com", 443,
			egress.Decision{Reason: "not on the allowlist"}},
		{"portless rule covers 80", egress.Policy{Global: []egress.Rule{allow("example.com", "global")}}, "example.com", 80,
			egress.Decision{Allowed: true, Rule: "example.com", Scope: "global", Explicit: true}},
		{"portless rule does not cover 22", egress.Policy{Global: []egress.Rule{allow("example.com", "global")}}, "example.com", 22,
			egress.Decision{Reason: "not on the allowlist"}},
		{"IP rule", egress.Policy{Sandbox: []egress.Rule{allow("127.0.0.1:8080", "myrepo")}}, "127.0.0.1", 8080,
			egress.Decision{Allowed: true, Rule: "127.0.0.1:8080", Scope: "myrepo", Explicit: true}},
		{"IPv6 rule, bracketed host", egress.Policy{Sandbox: []egress.Rule{allow("[::1]:9000", "myrepo")}}, "[::1]", 9000,
			egress.Decision{Allowed: true, Rule: "[::1]:9000", Scope: "myrepo", Explicit: true}},
		{"IPv4-mapped IPv6 host matches the IPv4 rule", egress.Policy{Sandbox: []egress.Rule{allow("10.0.0.1", "myrepo")}}, "::ffff:10.0.0.1", 443,
			egress.Decision{Allowed: true, Rule: "10.0.0.1", Scope: "myrepo", Explicit: true}},
		{"wildcard never matches an IP", egress.Policy{Global: []egress.Rule{allow("*.com", "global")}}, "1.2.3.4", 443,
			egress.Decision{Reason: "not on the allowlist"}},
		{"a default is never explicit", egress.Policy{Defaults: []string{"10.0.0.1"}}, "10.0.0.1", 443,
			egress.Decision{Allowed: true, Rule: "10.0.0.1", Scope: "default"}},
		{"invalid port", defaults, "api.anthropic.com", 0,
			egress.Decision{Reason: "invalid port 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.Decide(tt.host, tt.port); got != tt.want {
				t.Errorf("Decide(%q, %d) = %+v, want %+v", tt.host, tt.port, got, tt.want)
			}
		})
	}
}

func TestDecideInvalidHost(t *testing.T) {
	p := egress.Policy{Global: []egress.Rule{allow("*.com", "global")}}
	for _, host := range []string{"", "bad host.com", "2130706433", "0x7f.1", "fe80::1%eth0"} {
		if d := p.Decide(host, 443); d.Allowed || !strings.HasPrefix(d.Reason, "invalid host") {
			t.Errorf("Decide(%q) = %+v, want an invalid-host denial", host, d)
		}
	}
}

func TestParsePattern(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string // substring of the error; "" means success
	}{
		{"example.com", "example.com", ""},
		{"  Example.COM.  ", "example.com", ""},
		{"*.Example.com", "*.example.com", ""},
		{"example.com:8080", "example.com:8080", ""},
		{"example.com:08080", "example.com:8080", ""},
		{"localhost", "localhost", ""},
		{"my_host.internal", "my_host.internal", ""},
		{"127.0.0.1", "127.0.0.1", ""},
		{"127.0.0.1:8080", "127.0.0.1:8080", ""},
		{"[::1]:9000", "[::1]:9000", ""},
		{"::1", "::1", ""},
		{"[::1]", "::1", ""},
		{"[::ffff:10.0.0.1]", "10.0.0.1", ""},
		{"", "", "empty pattern"},
		{"   ", "", "empty pattern"},
		{"https://example.com", "", "drop the scheme"},
		{"example.com/path", "", "drop the path"},
		{"example.com?q", "", "drop the path"},
		{"user@example.com", "", "drop the user name"},
		{"*", "", "wildcard"},
		{"*example.com", "", "wildcard"},
		{"api.*.com", "", "wildcard"},
		{"*.*.example.com", "", "wildcard"},
		{"*.", "", "missing host"},
		{"*.10.0.0.1", "", "wildcard needs a domain"},
		{"example.com:0", "", "between 1 and 65535"},
		{"example.com:65536", "", "between 1 and 65535"},
		{"example.com:http", "", "between 1 and 65535"},
		{"example.com:+80", "", "between 1 and 65535"},
		{"example.com:", "", "empty port"},
		{"[::1", "", "missing \"]\""},
		{"[127.0.0.1]:80", "", "only for IPv6"},
		{"[::1]x", "", "unexpected"},
		{"exa mple.com", "", "contains"},
		{"-bad.com", "", "starts or ends with '-'"},
		{"a..com", "", "empty or over-long label"},
		{"2130706433", "", "looks numeric"},
		{"1.2.3", "", "looks numeric"},
		{"fe80::1%eth0", "", "zones are not allowed"},
		{"1:2", "", "looks numeric"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := egress.ParsePattern(tt.in)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ParsePattern(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
				}
				if again, err := egress.ParsePattern(got); err != nil || again != got {
					t.Errorf("ParsePattern(%q) = %q, %v; a normalised pattern must parse unchanged", got, again, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParsePattern(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
			}
		})
	}
}

func TestDefaultAllowlist(t *testing.T) {
	registries := []string{"registry.npmjs.org", "pypi.org", "files.pythonhosted.org", "proxy.golang.org", "crates.io",
		"deb.debian.org", "github.com", "codeload.github.com", "objects.githubusercontent.com"}
	tests := []struct {
		hosts  []string
		want   []string
		absent []string
	}{
		{[]string{"api.anthropic.com"}, append([]string{"api.anthropic.com"}, registries...), []string{"api.openai.com", "chatgpt.com", "storage.googleapis.com"}},
		{[]string{"api.openai.com", "chatgpt.com", "api.openai.com", "github.com"}, append([]string{"api.openai.com", "chatgpt.com"}, registries...), []string{"api.anthropic.com"}},
		{nil, registries, []string{"api.anthropic.com", "api.openai.com"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.hosts, "+"), func(t *testing.T) {
			got := egress.DefaultAllowlist(tt.hosts)
			for _, h := range tt.want {
				if !slices.Contains(got, h) {
					t.Errorf("missing %s in %v", h, got)
				}
			}
			for _, h := range tt.absent {
				if slices.Contains(got, h) {
					t.Errorf("%s should not be a default", h)
				}
			}
			if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Errorf("not sorted or has duplicates: %v", got)
			}
			for _, h := range got {
				if p, err := egress.ParsePattern(h); err != nil || p != h {
					t.Errorf("default %q does not parse as itself: %q, %v", h, p, err)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good := egress.Policy{Defaults: []string{"github.com"}, Global: []egress.Rule{allow("*.example.com", "global")}, Sandbox: []egress.Rule{deny("x.example.com", "s")}}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate() = %v on a valid policy", err)
	}
	bad := egress.Policy{Global: []egress.Rule{{Pattern: "example.com", Action: "block"}}, Sandbox: []egress.Rule{deny("http://x.com/", "s")}}
	err := bad.Validate()
	if err == nil || !strings.Contains(err.Error(), `action "block"`) || !strings.Contains(err.Error(), "http://x.com/") {
		t.Errorf("Validate() = %v, want both bad rules named", err)
	}
}
