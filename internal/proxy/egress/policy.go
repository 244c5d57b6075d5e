package egress

import (
	"errors"
	"fmt"
)

// Action is what a rule does to the destinations it matches.
type Action string

// The actions a rule may take.
const (
	// Allow lets a sandbox reach the destinations the rule matches.
	Allow Action = "allow"
	// Deny refuses them, even when a broader or lower-scope rule allows them.
	Deny Action = "deny"
)

// Scope names of the rules that are not tied to one sandbox.
const (
	// ScopeDefault marks the built-in allowlist (DefaultAllowlist).
	ScopeDefault = "default"
	// ScopeGlobal marks user rules that apply to every sandbox.
	ScopeGlobal = "global"
)

// Rule is one allowlist entry set by the user. Pattern is "host", "*.domain" (any subdomain, not the
// domain itself), "host:port", or an IP literal ("127.0.0.1", "127.0.0.1:8080", "[::1]:9000").
// Without a port a rule covers ports 80 and 443 only: opening every port of a host is rarely meant.
type Rule struct {
	// Pattern is the destination the rule matches, in the syntax ParsePattern accepts.
	Pattern string
	// Action says whether matching destinations are allowed or denied.
	Action Action
	// Scope is ScopeDefault, ScopeGlobal or a sandbox name; Decision.Scope reports it. When empty,
	// the scope the rule was found in is reported: ScopeGlobal, or "sandbox" for Policy.Sandbox.
	Scope string
}

// Policy is the set of rules that apply to one sandbox, from the three places they come from.
type Policy struct {
	// Defaults are allow patterns, normally from DefaultAllowlist.
	Defaults []string
	// Global are the user's rules for every sandbox.
	Global []Rule
	// Sandbox are the user's rules for this sandbox.
	Sandbox []Rule
}

// Decision says whether a destination may be reached and why, so that a refusal can tell the user
// which rule to change.
type Decision struct {
	// Allowed reports whether the destination is on the allowlist.
	Allowed bool
	// Rule is the canonical pattern that decided, "" when nothing matched.
	Rule string
	// Scope is the scope of that rule: ScopeDefault, ScopeGlobal, a sandbox name, or "".
	Scope string
	// Explicit is true when the deciding allow rule names this exact host (not a wildcard, not a
	// default): only explicit rules may open private, loopback and link-local addresses and bare IPs.
	Explicit bool
	// Reason explains a denial in words: "not on the allowlist", "denied by rule X (global)", ...
	Reason string
}

// Decide evaluates host:port against the policy. Precedence: a sandbox rule beats a global rule beats
// a default. Within one scope the most specific matching pattern wins (an exact host beats a wildcard,
// a wildcard on a longer domain beats a shorter one), and at equal specificity deny beats allow, so a
// user can both carve an exception out of a denied domain and deny one host of an allowed one. Hosts
// compare case-insensitively with a trailing dot ignored. Patterns that do not parse never match; see
// Validate.
func (p Policy) Decide(host string, port int) Decision {
	h, isIP, err := canonicalHost(host)
	if err != nil {
		return Decision{Reason: fmt.Sprintf("invalid host: %v", err)}
	}
	if port < 1 || port > 65535 {
		return Decision{Reason: fmt.Sprintf("invalid port %d", port)}
	}
	if d, ok := decideScope(p.Sandbox, "sandbox", h, isIP, port); ok {
		return d
	}
	if d, ok := decideScope(p.Global, ScopeGlobal, h, isIP, port); ok {
		return d
	}
	defaults := make([]Rule, len(p.Defaults))
	for i, d := range p.Defaults {
		defaults[i] = Rule{Pattern: d, Action: Allow, Scope: ScopeDefault}
	}
	if d, ok := decideScope(defaults, ScopeDefault, h, isIP, port); ok {
		d.Explicit = false
		return d
	}
	return Decision{Reason: "not on the allowlist"}
}

// decideScope picks the winning rule of one scope, if any matches. fallback names the scope of rules
// whose Scope is empty.
func decideScope(rules []Rule, fallback, host string, isIP bool, port int) (Decision, bool) {
	var (
		best      pattern
		bestRule  Rule
		bestRank  = -1
		bestFound bool
	)
	for _, r := range rules {
		if r.Action != Allow && r.Action != Deny {
			continue
		}
		pat, err := parsePattern(r.Pattern)
		if err != nil || !pat.matches(host, isIP, port) {
			continue
		}
		rank := pat.specificity()
		if rank > bestRank || rank == bestRank && r.Action == Deny && bestRule.Action == Allow {
			best, bestRule, bestRank, bestFound = pat, r, rank, true
		}
	}
	if !bestFound {
		return Decision{}, false
	}
	scope := bestRule.Scope
	if scope == "" {
		scope = fallback
	}
	d := Decision{Allowed: bestRule.Action == Allow, Rule: best.String(), Scope: scope}
	if d.Allowed {
		d.Explicit = !best.wildcard
	} else {
		d.Reason = fmt.Sprintf("denied by rule %s (%s)", d.Rule, describeScope(scope))
	}
	return d, true
}

// describeScope names a scope for a sentence: "global", "default" or "sandbox NAME".
func describeScope(scope string) string {
	switch scope {
	case ScopeGlobal, ScopeDefault, "sandbox":
		return scope
	}
	return "sandbox " + scope
}

// Validate reports every pattern or action of the policy that Decide would ignore. The proxy refuses
// all traffic of a sandbox whose policy does not validate: a deny rule that silently matched nothing
// would open what the user meant to close.
func (p Policy) Validate() error {
	var errs []error
	for _, d := range p.Defaults {
		if _, err := parsePattern(d); err != nil {
			errs = append(errs, fmt.Errorf("default rule: %w", err))
		}
	}
	check := func(scope string, rules []Rule) {
		for _, r := range rules {
			if r.Action != Allow && r.Action != Deny {
				errs = append(errs, fmt.Errorf("%s rule %q: action %q is neither %q nor %q", scope, r.Pattern, r.Action, Allow, Deny))
			}
			if _, err := parsePattern(r.Pattern); err != nil {
				errs = append(errs, fmt.Errorf("%s rule: %w", scope, err))
			}
		}
	}
	check(ScopeGlobal, p.Global)
	check("sandbox", p.Sandbox)
	return errors.Join(errs...)
}
