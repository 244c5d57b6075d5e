package sandbox

import (
	"context"
	"time"

	"github.com/paddockhq/paddock/internal/netpolicy"
)

// StartNetLearning puts a sandbox in egress learn mode for d (an hour when 0).
func (s *Service) StartNetLearning(ctx context.Context, sandbox string, d time.Duration) (netpolicy.Learning, error) {
	return s.net.StartLearning(ctx, sandbox, d)
}

// StopNetLearning ends a sandbox's egress learn mode, keeping what it learned.
func (s *Service) StopNetLearning(ctx context.Context, sandbox string) (netpolicy.Learning, error) {
	return s.net.StopLearning(ctx, sandbox)
}

// NetLearnings lists the sandboxes in egress learn mode now.
func (s *Service) NetLearnings(ctx context.Context) ([]netpolicy.Learning, error) {
	return s.net.Learnings(ctx)
}

// NetProposal is the allowlist a sandbox's learn mode proposes, as a diff against its
// rules; apply makes it its rules, prune removes its own allow rules never used.
func (s *Service) NetProposal(ctx context.Context, sandbox string, prune, apply bool) (netpolicy.Proposal, error) {
	if apply {
		return s.net.ApplyProposal(ctx, sandbox, prune)
	}
	return s.net.Propose(ctx, sandbox, prune)
}
