package netpolicy

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/paddockhq/paddock/internal/alarm"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/proxy/egress"
	"github.com/paddockhq/paddock/internal/store"
)

// WildcardMin is how many distinct subdomains of one registrable domain a proposal
// must need before it proposes *.domain instead of each host.
const WildcardMin = 3

// Proposal is wire.Proposal.
type Proposal = wire.Proposal

// ProposalLine is wire.ProposalLine.
type ProposalLine = wire.ProposalLine

// LearnedDest is wire.LearnedDest.
type LearnedDest = wire.LearnedDest

// Propose computes a sandbox's proposal from what it learned, against its rules today.
// With prune, the sandbox's own allow rules that allowed nothing are proposed for removal.
func (p *Rules) Propose(ctx context.Context, sandbox string, prune bool) (Proposal, error) {
	lr, learned, err := p.learned(ctx, sandbox)
	if err != nil {
		return Proposal{}, err
	}
	pol, err := p.Egress(ctx, sandbox)
	if err != nil {
		return Proposal{}, err
	}
	rules, err := p.List(ctx, sandbox)
	if err != nil {
		return Proposal{}, err
	}
	return propose(lr, lr.Sandbox, pol, rules, learned, prune), nil
}

// ApplyProposal makes a sandbox's proposal its rules, through Set (and Remove when
// pruning), as `paddock net allow` would; it returns the proposal applied.
func (p *Rules) ApplyProposal(ctx context.Context, sandbox string, prune bool) (Proposal, error) {
	prop, err := p.Propose(ctx, sandbox, prune)
	if err != nil {
		return Proposal{}, err
	}
	for _, l := range prop.Lines {
		switch l.Op {
		case "+":
			if _, err := p.Set(ctx, sandbox, l.Pattern, l.Action); err != nil {
				return Proposal{}, err
			}
		case "-":
			if err := p.Remove(ctx, sandbox, l.Pattern); err != nil {
				return Proposal{}, err
			}
		}
	}
	prop.Applied = true
	return prop, nil
}

// ruleKey identifies a rule by scope and canonical pattern.
func ruleKey(scope, pattern string) string {
	if norm, err := egress.ParsePattern(pattern); err == nil {
		pattern = norm
	}
	return scope + "\x00" + pattern
}

// propose is Propose on data: each destination is decided against today's policy. One
// that a rule allows counts for that rule; one a deny rule refuses is left refused; one
// nothing allows (or only a wildcard or default, for a private address) needs a rule of
// its own: its host, or host:port off ports 80 and 443. WildcardMin or more such hosts
// under one registrable domain (a public suffix and one label more, by the public
// suffix list, which counts suffixes such as github.io too) become *.domain, unless a
// deny rule names something under that domain; a public suffix is never wildcarded.
func propose(lr Learning, sandbox string, pol egress.Policy, rules []Rule, learned []store.NetLearned, prune bool) Proposal {
	prop := Proposal{Learning: lr, Lines: []ProposalLine{}, Learned: []LearnedDest{}}
	for _, d := range learned {
		prop.Learned = append(prop.Learned, learnedDest(d, d.Reason))
	}
	type use struct {
		n     int
		hosts []string
	}
	used := map[string]*use{}
	count := func(key, dest string, n int) {
		u := used[key]
		if u == nil {
			u = &use{}
			used[key] = u
		}
		u.n += n
		u.hosts = addOnce(u.hosts, dest, 10)
	}
	needs := map[string]*use{} // by the exact pattern each destination needs
	var needOrder []string
	for _, d := range learned {
		dest := hostPort(d.Host, d.Port)
		dec := pol.Decide(d.Host, d.Port)
		private := d.Refused > 0 && (strings.Contains(d.Reason, "private address") || strings.Contains(d.Reason, "bare IP"))
		switch {
		case dec.Allowed && !(private && !dec.Explicit):
			count(ruleKey(scopeOf(dec.Scope, sandbox), dec.Rule), dest, d.Count)
		case !dec.Allowed && dec.Rule != "":
			count(ruleKey(scopeOf(dec.Scope, sandbox), dec.Rule), dest, d.Count)
			prop.Refused = append(prop.Refused, learnedDest(d, dec.Reason))
		case dataName(d.Host) != "":
			prop.Suspect = append(prop.Suspect, learnedDest(d, "the name carries data: "+dataName(d.Host)))
		default:
			pat := d.Host
			if d.Port != 80 && d.Port != 443 {
				pat = dest
			}
			if needs[pat] == nil {
				needs[pat] = &use{}
				needOrder = append(needOrder, pat)
			}
			needs[pat].n += d.Count
			needs[pat].hosts = addOnce(needs[pat].hosts, dest, 10)
		}
	}
	for _, r := range rules {
		l := ProposalLine{Op: " ", Action: r.Action, Pattern: r.Pattern, Scope: r.Scope}
		if u := used[ruleKey(r.Scope, r.Pattern)]; u != nil {
			l.Requests, l.Hosts = u.n, u.hosts
		} else if prune && r.Scope == sandbox && r.Action == "allow" {
			l.Op = "-"
		}
		prop.Lines = append(prop.Lines, l)
	}

	// Group the hosts on ports 80 and 443 by registrable domain.
	groups := map[string][]string{}
	for _, pat := range needOrder {
		if strings.Contains(pat, ":") || isIP(pat) {
			continue
		}
		dom, err := publicsuffix.EffectiveTLDPlusOne(pat)
		if err != nil || dom == pat {
			continue
		}
		groups[dom] = append(groups[dom], pat)
	}
	wild := map[string]string{} // host -> the wildcard that covers it
	for dom, hosts := range groups {
		if len(hosts) >= WildcardMin && !denied(pol, dom) {
			for _, h := range hosts {
				wild[h] = "*." + dom
			}
		}
	}
	var adds []ProposalLine
	seen := map[string]int{}
	for _, pat := range needOrder {
		target := pat
		if w, ok := wild[pat]; ok {
			target = w
		}
		u := needs[pat]
		if i, ok := seen[target]; ok {
			adds[i].Requests += u.n
			for _, h := range u.hosts {
				adds[i].Hosts = addOnce(adds[i].Hosts, h, 10)
			}
			continue
		}
		seen[target] = len(adds)
		adds = append(adds, ProposalLine{Op: "+", Action: "allow", Pattern: target, Scope: sandbox, Requests: u.n, Hosts: slices.Clone(u.hosts)})
	}
	slices.SortFunc(adds, func(a, b ProposalLine) int { return strings.Compare(a.Pattern, b.Pattern) })
	prop.Lines = append(prop.Lines, adds...)
	return prop
}

// learnedDest is d as a proposal shows it, with reason.
func learnedDest(d store.NetLearned, reason string) LearnedDest {
	return LearnedDest{Host: d.Host, Port: d.Port, Requests: d.Count, Refused: d.Refused, Reason: reason,
		Methods: d.Methods, Paths: d.Paths, First: rfc3339(d.FirstSeen), Last: rfc3339(d.LastSeen)}
}

// dataName says why a label of host reads as data (alarm.DataLabel), or "" when none does.
func dataName(host string) string {
	for _, l := range strings.Split(host, ".") {
		if why := alarm.DataLabel(l); why != "" {
			return why
		}
	}
	return ""
}

// scopeOf maps a Decision's scope to a Rule's: "sandbox" (a rule found in the sandbox's
// own list) is the sandbox's name.
func scopeOf(scope, sandbox string) string {
	if scope == "sandbox" {
		return sandbox
	}
	return scope
}

// denied reports whether a deny rule names dom, something under it, or a domain above it.
func denied(pol egress.Policy, dom string) bool {
	for _, r := range append(slices.Clone(pol.Global), pol.Sandbox...) {
		if r.Action != egress.Deny {
			continue
		}
		h := strings.TrimPrefix(r.Pattern, "*.")
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		if h == dom || strings.HasSuffix(h, "."+dom) || strings.HasSuffix(dom, "."+h) {
			return true
		}
	}
	return false
}

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(strings.Trim(s, "[]"))
	return err == nil
}
