package sandbox

import (
	"context"
	"errors"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
)

// limits reads the resource limits in force on a running sandbox. With none, it says why
// and how to fix it in note; both are empty when the backend does not enforce limits at
// all, or they could not be read.
func (s *Service) limits(ctx context.Context, b backend.Backend, id backend.ID) (*backend.Limits, string) {
	lr, ok := b.(backend.LimitReader)
	if !ok || !b.Describe().Limits {
		return nil, ""
	}
	l, err := lr.Limits(ctx, id)
	var ne *backend.LimitsNotEnforcedError
	switch {
	case errors.As(err, &ne):
		note := ne.Error()
		if ne.Fix != "" {
			note += " (fix: " + ne.Fix + ")"
		}
		return nil, note
	case err != nil:
		s.log.Debug("read a sandbox's limits", "sandbox", id, "err", err)
		return nil, ""
	}
	return &l, ""
}

// canLimitDisk refuses, before anything is made, a disk limit the backend cannot set:
// a limit paddock would only claim is worse than none.
func canLimitDisk(ctx context.Context, b backend.Backend, diskBytes int64) error {
	if diskBytes <= 0 {
		return nil
	}
	dl, ok := b.(backend.DiskLimiter)
	if !ok || !b.Describe().DiskLimit {
		return apperr.Invalid("use --backend "+backend.Which(func(d backend.Description) bool { return d.DiskLimit })+", or leave out --disk",
			"--disk is not supported by the %s backend", b.Name())
	}
	if err := dl.CanLimitDisk(ctx); err != nil {
		var fixer interface{ FixText() string }
		hint := ""
		if errors.As(err, &fixer) {
			hint = fixer.FixText()
		}
		return apperr.Unavailable(hint, "%v", err)
	}
	return nil
}
