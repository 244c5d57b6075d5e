// Package netpolicy holds the egress rules of sandboxes (paddock's defaults, the user's
// global rules and each sandbox's own) as the egress proxy reads them, and records the
// requests the proxy refuses so that the user can list them and allow one.
package netpolicy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/proxy/egress"
	"github.com/paddockhq/paddock/internal/store"
)

// Sandboxes is what Rules needs of the sandbox service.
type Sandboxes interface {
	// Get returns the record of the sandbox with this name, or an apperr not-found error
	// that says what to run.
	Get(ctx context.Context, name string) (store.Sandbox, error)
	// Emit records an event of a sandbox and publishes it.
	Emit(ctx context.Context, sb store.Sandbox, ev events.Event)
}

// Options configure Rules.
type Options struct {
	Store     *store.Store
	Sandboxes Sandboxes
	Logger    *slog.Logger
}

// Rules holds the egress rules and the record of denials. It is safe for concurrent use.
type Rules struct {
	opts    Options
	log     *slog.Logger
	denials pendingDenials // repeats of egress denials not written yet
	learn   learner        // sandboxes in learn mode, and what they reached for not written yet
}

// New constructs Rules.
func New(opts Options) *Rules {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Rules{opts: opts, log: log}
}

// Egress is the egress proxy's view of a sandbox's rules (egress.Options.Policy), read for
// every request so that a change applies at once.
func (p *Rules) Egress(ctx context.Context, name string) (egress.Policy, error) {
	sb, err := p.opts.Sandboxes.Get(ctx, name)
	if err != nil {
		return egress.Policy{}, err
	}
	rules, err := p.opts.Store.NetRules(ctx, store.GlobalScope, sb.ID)
	if err != nil {
		return egress.Policy{}, err
	}
	pol := egress.Policy{Defaults: egress.DefaultAllowlist(providerHosts(splitList(sb.Agents)))}
	for _, r := range rules {
		rule := egress.Rule{Pattern: r.Pattern, Action: egress.Action(r.Action), Scope: "global"}
		if r.Scope == store.GlobalScope {
			pol.Global = append(pol.Global, rule)
		} else {
			rule.Scope = sb.Name
			pol.Sandbox = append(pol.Sandbox, rule)
		}
	}
	return pol, nil
}

// Rule is wire.NetRule.
type Rule = wire.NetRule

// Denial is wire.Denial.
type Denial = wire.Denial

// scope resolves a rule scope: a sandbox name, or "" for every sandbox.
func (p *Rules) scope(ctx context.Context, sandbox string) (string, error) {
	if sandbox == "" {
		return store.GlobalScope, nil
	}
	sb, err := p.opts.Sandboxes.Get(ctx, sandbox)
	if err != nil {
		return "", err
	}
	return sb.ID, nil
}

// Set allows or denies a pattern for one sandbox, or for all ("" sandbox).
func (p *Rules) Set(ctx context.Context, sandbox, pattern, action string) (Rule, error) {
	if action != "allow" && action != "deny" {
		return Rule{}, apperr.Invalid("", "action must be allow or deny, got %q", action)
	}
	norm, err := egress.ParsePattern(pattern)
	if err != nil {
		return Rule{}, apperr.Invalid("give a host (example.com), a wildcard (*.example.com) or host:port", "%v", err)
	}
	scope, err := p.scope(ctx, sandbox)
	if err != nil {
		return Rule{}, err
	}
	if err := p.opts.Store.SetNetRule(ctx, scope, norm, action); err != nil {
		return Rule{}, err
	}
	return Rule{Pattern: norm, Action: action, Scope: scopeName(sandbox)}, nil
}

// Remove removes a user rule.
func (p *Rules) Remove(ctx context.Context, sandbox, pattern string) error {
	norm, err := egress.ParsePattern(pattern)
	if err != nil {
		return apperr.Invalid("", "%v", err)
	}
	scope, err := p.scope(ctx, sandbox)
	if err != nil {
		return err
	}
	if err := p.opts.Store.DeleteNetRule(ctx, scope, norm); errors.Is(err, store.ErrNotFound) {
		return apperr.NotFound("run `paddock net ls` to see the rules", "no %s rule for %s", scopeName(sandbox), norm)
	} else if err != nil {
		return err
	}
	return nil
}

// scopeName is how a rule scope reads to the user: a sandbox's name, or "global".
func scopeName(sandbox string) string {
	if sandbox == "" {
		return "global"
	}
	return sandbox
}

// List lists the rules that apply to a sandbox (defaults, global, its own), or the
// global rules alone when sandbox is "".
func (p *Rules) List(ctx context.Context, sandbox string) ([]Rule, error) {
	var out []Rule
	if sandbox == "" {
		rules, err := p.opts.Store.NetRules(ctx, store.GlobalScope)
		if err != nil {
			return nil, err
		}
		for _, r := range rules {
			out = append(out, Rule{Pattern: r.Pattern, Action: r.Action, Scope: "global"})
		}
		return out, nil
	}
	pol, err := p.Egress(ctx, sandbox)
	if err != nil {
		return nil, err
	}
	for _, d := range pol.Defaults {
		out = append(out, Rule{Pattern: d, Action: "allow", Scope: "default"})
	}
	for _, r := range append(pol.Global, pol.Sandbox...) {
		out = append(out, Rule{Pattern: r.Pattern, Action: string(r.Action), Scope: r.Scope})
	}
	return out, nil
}

// Denials lists refused egress requests, of one sandbox or of all.
func (p *Rules) Denials(ctx context.Context, sandbox string, limit int) ([]Denial, error) {
	id := ""
	if sandbox != "" {
		sb, err := p.opts.Sandboxes.Get(ctx, sandbox)
		if err != nil {
			return nil, err
		}
		id = sb.ID
	}
	if err := p.Flush(ctx); err != nil {
		return nil, err
	}
	rows, err := p.opts.Store.NetDenials(ctx, id, limit)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	if all, err := p.opts.Store.ListSandboxes(ctx); err == nil {
		for _, sb := range all {
			names[sb.ID] = sb.Name
		}
	}
	out := []Denial{}
	for _, d := range rows {
		out = append(out, Denial{ID: d.ID, Time: d.Time.UTC().Format("2006-01-02T15:04:05Z"),
			LastSeen: d.LastSeen.UTC().Format("2006-01-02T15:04:05Z"), Sandbox: names[d.SandboxID],
			Host: d.Host, Port: d.Port, Reason: d.Reason, Count: d.Count})
	}
	return out, nil
}

// AllowDenial turns a recorded denial into an allow rule for its sandbox.
func (p *Rules) AllowDenial(ctx context.Context, id int64) (Rule, error) {
	d, err := p.opts.Store.NetDenial(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Rule{}, apperr.NotFound("run `paddock net denials` to see them", "no denial with id %d", id)
	} else if err != nil {
		return Rule{}, err
	}
	all, err := p.opts.Store.ListSandboxes(ctx)
	if err != nil {
		return Rule{}, err
	}
	for _, sb := range all {
		if sb.ID == d.SandboxID {
			pattern := d.Host
			if d.Port != 80 && d.Port != 443 {
				pattern = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
			}
			return p.Set(ctx, sb.Name, pattern, "allow")
		}
	}
	return Rule{}, apperr.NotFound("", "denial %d belongs to a sandbox that no longer exists", id)
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

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
