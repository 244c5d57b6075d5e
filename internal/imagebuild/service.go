package imagebuild

import (
	"context"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
)

// Service is the daemon's image verbs (paddock image build, image load) over its
// backends, as the API serves them.
type Service struct {
	backends map[string]backend.Backend
}

// NewService returns the image verbs over the daemon's backends, by name.
func NewService(backends map[string]backend.Backend) *Service {
	return &Service{backends: backends}
}

// Load copies a local image to where a backend's sandboxes run (a cluster's nodes): for
// backends that run images kept outside the host's engine.
func (s *Service) Load(ctx context.Context, backendName, ref string, progress func(string)) error {
	if backendName == "" {
		return apperr.Invalid("name one: paddock image load --backend "+backend.Which(func(d backend.Description) bool { return d.Images.Load }),
			"image load needs the backend to load the image for")
	}
	b, ok := s.backends[backendName]
	if !ok {
		return apperr.Invalid("see `paddock doctor` for the backends", "unknown backend %q", backendName)
	}
	l, ok := b.(backend.ImageLoader)
	if !ok || !b.Describe().Images.Load {
		return apperr.Invalid("", "backend %s runs images from the host's own engine, or none: there is nothing to load", backendName)
	}
	return l.LoadImage(ctx, ref, progress)
}
