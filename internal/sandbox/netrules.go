package sandbox

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/proxy/egress"
	"github.com/paddockhq/paddock/internal/store"
)

// egressPolicy is the egress proxy's view of a sandbox's rules, read for every request
// so that a change applies at once.
func (s *Service) egressPolicy(ctx context.Context, name string) (egress.Policy, error) {
	sb, err := s.record(ctx, name)
	if err != nil {
		return egress.Policy{}, err
	}
	rules, err := s.opts.Store.NetRules(ctx, store.GlobalScope, sb.ID)
	if err != nil {
		return egress.Policy{}, err
	}
	p := egress.Policy{Defaults: egress.DefaultAllowlist(providerHosts(splitList(sb.Agents)))}
	for _, r := range rules {
		rule := egress.Rule{Pattern: r.Pattern, Action: egress.Action(r.Action), Scope: "global"}
		if r.Scope == store.GlobalScope {
			p.Global = append(p.Global, rule)
		} else {
			rule.Scope = sb.Name
			p.Sandbox = append(p.Sandbox, rule)
		}
	}
	return p, nil
}

// NetRule is an egress rule as the user sees it.
type NetRule struct {
	Pattern string `json:"pattern"`
	Action  string `json:"action"`
	// Scope is "default", "global", or the sandbox's name.
	Scope string `json:"scope"`
}

// NetDenial is a refused egress request as the user sees it: identical requests refused
// within a minute of the first are one denial with a count.
type NetDenial struct {
	ID int64 `json:"id"`
	// Time is when the first was refused, LastSeen when the last was (UTC, RFC 3339).
	Time     string `json:"time"`
	LastSeen string `json:"last_seen"`
	Sandbox  string `json:"sandbox"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Reason   string `json:"reason"`
	// Count is how many requests were refused.
	Count int `json:"count"`
}

// scope resolves a rule scope: a sandbox name, or "" for every sandbox.
func (s *Service) scope(ctx context.Context, sandbox string) (string, error) {
	if sandbox == "" {
		return store.GlobalScope, nil
	}
	sb, err := s.record(ctx, sandbox)
	if err != nil {
		return "", err
	}
	return sb.ID, nil
}

// SetNetRule allows or denies a pattern for one sandbox, or for all ("" sandbox).
func (s *Service) SetNetRule(ctx context.Context, sandbox, pattern, action string) (NetRule, error) {
	if action != "allow" && action != "deny" {
		return NetRule{}, apperr.Invalid("", "action must be allow or deny, got %q", action)
	}
	norm, err := egress.ParsePattern(pattern)
	if err != nil {
		return NetRule{}, apperr.Invalid("give a host (example.com), a wildcard (*.example.com) or host:port", "%v", err)
	}
	scope, err := s.scope(ctx, sandbox)
	if err != nil {
		return NetRule{}, err
	}
	if err := s.opts.Store.SetNetRule(ctx, scope, norm, action); err != nil {
		return NetRule{}, err
	}
	return NetRule{Pattern: norm, Action: action, Scope: scopeName(sandbox)}, nil
}

// RemoveNetRule removes a user rule.
func (s *Service) RemoveNetRule(ctx context.Context, sandbox, pattern string) error {
	norm, err := egress.ParsePattern(pattern)
	if err != nil {
		return apperr.Invalid("", "%v", err)
	}
	scope, err := s.scope(ctx, sandbox)
	if err != nil {
		return err
	}
	if err := s.opts.Store.DeleteNetRule(ctx, scope, norm); errors.Is(err, store.ErrNotFound) {
		return apperr.NotFound("run `paddock net ls` to see the rules", "no %s rule for %s", scopeName(sandbox), norm)
	} else if err != nil {
		return err
	}
	return nil
}

func scopeName(sandbox string) string {
	if sandbox == "" {
		return "global"
	}
	return sandbox
}

// NetRules lists the rules that apply to a sandbox (defaults, global, its own), or the
// global rules alone when sandbox is "".
func (s *Service) NetRules(ctx context.Context, sandbox string) ([]NetRule, error) {
	var out []NetRule
	if sandbox == "" {
		rules, err := s.opts.Store.NetRules(ctx, store.GlobalScope)
		if err != nil {
			return nil, err
		}
		for _, r := range rules {
			out = append(out, NetRule{Pattern: r.Pattern, Action: r.Action, Scope: "global"})
		}
		return out, nil
	}
	p, err := s.egressPolicy(ctx, sandbox)
	if err != nil {
		return nil, err
	}
	for _, d := range p.Defaults {
		out = append(out, NetRule{Pattern: d, Action: "allow", Scope: "default"})
	}
	for _, r := range append(p.Global, p.Sandbox...) {
		out = append(out, NetRule{Pattern: r.Pattern, Action: string(r.Action), Scope: r.Scope})
	}
	return out, nil
}

// Denials lists refused egress requests, of one sandbox or of all.
func (s *Service) Denials(ctx context.Context, sandbox string, limit int) ([]NetDenial, error) {
	id := ""
	if sandbox != "" {
		sb, err := s.record(ctx, sandbox)
		if err != nil {
			return nil, err
		}
		id = sb.ID
	}
	if err := s.flushDenials(ctx); err != nil {
		return nil, err
	}
	rows, err := s.opts.Store.NetDenials(ctx, id, limit)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	if all, err := s.opts.Store.ListSandboxes(ctx); err == nil {
		for _, sb := range all {
			names[sb.ID] = sb.Name
		}
	}
	out := []NetDenial{}
	for _, d := range rows {
		out = append(out, NetDenial{ID: d.ID, Time: d.Time.UTC().Format("2006-01-02T15:04:05Z"),
			LastSeen: d.LastSeen.UTC().Format("2006-01-02T15:04:05Z"), Sandbox: names[d.SandboxID],
			Host: d.Host, Port: d.Port, Reason: d.Reason, Count: d.Count})
	}
	return out, nil
}

// AllowDenial turns a recorded denial into an allow rule for its sandbox.
func (s *Service) AllowDenial(ctx context.Context, id int64) (NetRule, error) {
	d, err := s.opts.Store.NetDenial(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return NetRule{}, apperr.NotFound("run `paddock net denials` to see them", "no denial with id %d", id)
	} else if err != nil {
		return NetRule{}, err
	}
	all, err := s.opts.Store.ListSandboxes(ctx)
	if err != nil {
		return NetRule{}, err
	}
	for _, sb := range all {
		if sb.ID == d.SandboxID {
			pattern := d.Host
			if d.Port != 80 && d.Port != 443 {
				pattern = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
			}
			return s.SetNetRule(ctx, sb.Name, pattern, "allow")
		}
	}
	return NetRule{}, apperr.NotFound("", "denial %d belongs to a sandbox that no longer exists", id)
}

// providerHosts are the hosts the named agents need to reach their model providers;
// names paddock does not know add none.
func providerHosts(names []string) []string {
	var hosts []string
	for _, name := range names {
		if a, err := agents.Get(strings.ToLower(strings.TrimSpace(name))); err == nil {
			hosts = append(hosts, a.Hosts...)
		}
	}
	return hosts
}
