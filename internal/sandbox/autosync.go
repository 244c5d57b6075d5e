package sandbox

import (
	"context"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/autosync"
)

// SetSyncMode sets a sandbox's sync mode (autosync.Manual, OnCommit or OnIdle).
func (s *Service) SetSyncMode(ctx context.Context, name, mode string) (Info, error) {
	if !autosync.ValidMode(mode) {
		return Info{}, apperr.Invalid("use manual, on-commit or on-idle", "unknown sync mode %q", mode)
	}
	sb, err := s.record(ctx, name)
	if err != nil {
		return Info{}, err
	}
	if mode != autosync.Manual && sb.SourcePath == "" {
		return Info{}, apperr.Invalid("", "sandbox %q has no host repository to sync into", name)
	}
	sb.SyncMode = mode
	if err := s.opts.Store.UpdateSandbox(ctx, sb); err != nil {
		return Info{}, err
	}
	return s.info(ctx, sb), nil
}
