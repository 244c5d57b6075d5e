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

// AutoSync runs the automatic syncs until ctx is done (see autosync.Syncer.Run).
func (s *Service) AutoSync(ctx context.Context) {
	s.syncer.Run(ctx)
}

// RecordSync records what a sync run elsewhere (`paddock sync`) fetched: result is its
// JSON, with the number of refs it updated in "updates" if it says.
func (s *Service) RecordSync(ctx context.Context, name, result string) error {
	sb, err := s.record(ctx, name)
	if err != nil {
		return err
	}
	return s.syncer.Record(ctx, sb, result)
}

// SyncNow syncs a sandbox into its host repository on the daemon's machine, now (the web
// UI's Sync): see autosync.Syncer.Sync.
func (s *Service) SyncNow(ctx context.Context, name string) (autosync.SyncAnswer, error) {
	sb, err := s.record(ctx, name)
	if err != nil {
		return autosync.SyncAnswer{}, err
	}
	return s.syncer.Sync(ctx, sb)
}

// Merge syncs a sandbox into its host repository on the daemon's machine and merges its
// branch there (the web UI's Merge): see autosync.Syncer.Merge.
func (s *Service) Merge(ctx context.Context, name string, opts autosync.MergeOptions) (autosync.MergeAnswer, error) {
	sb, err := s.record(ctx, name)
	if err != nil {
		return autosync.MergeAnswer{}, err
	}
	return s.syncer.Merge(ctx, sb, opts)
}
