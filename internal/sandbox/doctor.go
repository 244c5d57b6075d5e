package sandbox

import (
	"context"
	"errors"
	"sort"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/backend"
)

// BackendReport is wire.BackendReport (the API's wire type).
type BackendReport = wire.BackendReport

// Doctor checks every backend this daemon has.
func (s *Service) Doctor(ctx context.Context) []BackendReport {
	var out []BackendReport
	def, _ := s.PickBackend(ctx, "")
	for name, b := range s.opts.Backends {
		d := backend.Describe(b)
		r := BackendReport{Name: name, Available: true, Default: def != nil && def.Name() == name,
			Isolation: d.Isolation, Preference: d.Default, Emulated: d.Emulated, Slow: d.Slow}
		if err := b.Available(ctx); err != nil {
			r.Available = false
			r.Reason = err.Error()
			var ue *backend.UnavailableError
			if errors.As(err, &ue) {
				r.Reason, r.Fix = ue.Reason, ue.Fix
			}
		}
		if rs, ok := b.(backend.RuntimeSelector); ok && r.Available {
			r.Runtimes = rs.Runtimes(ctx)
		}
		if rp, ok := b.(backend.Reporter); ok && r.Available {
			r.Findings = rp.Report(ctx)
		}
		if vm, ok := b.(backend.VM); ok && r.Available {
			r.VM = vm.OwnKernel()
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
