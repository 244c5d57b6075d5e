package sandbox

import (
	"context"

	"github.com/paddockhq/paddock/internal/netpolicy"
)

// SetNetRule allows or denies a pattern for one sandbox, or for all ("" sandbox).
func (s *Service) SetNetRule(ctx context.Context, sandbox, pattern, action string) (netpolicy.Rule, error) {
	return s.net.Set(ctx, sandbox, pattern, action)
}

// RemoveNetRule removes a user rule.
func (s *Service) RemoveNetRule(ctx context.Context, sandbox, pattern string) error {
	return s.net.Remove(ctx, sandbox, pattern)
}

// NetRules lists the rules that apply to a sandbox (defaults, global, its own), or the
// global rules alone when sandbox is "".
func (s *Service) NetRules(ctx context.Context, sandbox string) ([]netpolicy.Rule, error) {
	return s.net.List(ctx, sandbox)
}

// Denials lists refused egress requests, of one sandbox or of all.
func (s *Service) Denials(ctx context.Context, sandbox string, limit int) ([]netpolicy.Denial, error) {
	return s.net.Denials(ctx, sandbox, limit)
}

// AllowDenial turns a recorded denial into an allow rule for its sandbox.
func (s *Service) AllowDenial(ctx context.Context, id int64) (netpolicy.Rule, error) {
	return s.net.AllowDenial(ctx, id)
}
