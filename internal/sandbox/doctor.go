package sandbox

import (
	"context"
	"errors"
	"sort"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/imagebuild"
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

// BuildImage builds a backend's sandbox image, with the CLIs of the named agents at the
// versions paddock's tests run (see imagebuild.Build).
func (s *Service) BuildImage(ctx context.Context, backendName string, spec backend.ImageSpec, agentNames []string, progress func(string)) (string, error) {
	return imagebuild.Build(ctx, s.opts.Backends, backendName, spec, agentNames, progress)
}

// LoadImage copies a local image to where a backend's sandboxes run (a cluster's
// nodes): for backends that run images kept outside the host's engine.
func (s *Service) LoadImage(ctx context.Context, backendName, ref string, progress func(string)) error {
	if backendName == "" {
		return apperr.Invalid("name one: paddock image load --backend kubernetes", "image load needs the backend to load the image for")
	}
	b, ok := s.opts.Backends[backendName]
	if !ok {
		return apperr.Invalid("see `paddock doctor` for the backends", "unknown backend %q", backendName)
	}
	l, ok := b.(backend.ImageLoader)
	if !ok {
		return apperr.Invalid("", "backend %s runs images from the host's own engine, or none: there is nothing to load", backendName)
	}
	return l.LoadImage(ctx, ref, progress)
}

// PrepareImage makes the form of a built image that the backend named format boots
// (see imagebuild.Prepare).
func (s *Service) PrepareImage(ctx context.Context, format, image string, progress func(string)) (string, error) {
	return imagebuild.Prepare(ctx, s.opts.Backends, format, image, progress)
}

// BuildDockerfile builds a Dockerfile into tag with a backend that can (see
// imagebuild.Dockerfile).
func (s *Service) BuildDockerfile(ctx context.Context, backendName, contextDir, dockerfile, tag string, progress func(string)) error {
	return imagebuild.Dockerfile(ctx, s.opts.Backends, backendName, contextDir, dockerfile, tag, progress)
}
