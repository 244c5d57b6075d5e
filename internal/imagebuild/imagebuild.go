// Package imagebuild builds sandbox images with the backends that use them: paddock's own
// image, with the CLIs of the agents asked for, or a Dockerfile of the user's.
package imagebuild

import (
	"context"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
)

// defaultBackend is the backend that does what can asks of its description when a
// request names none: of those that can, the first in the order of defaults (docker
// builds images and Dockerfiles); "" when none can.
func (s *Service) defaultBackend(can func(backend.Description) bool) string {
	var names []string
	for n, b := range s.backends {
		if can(b.Describe()) {
			names = append(names, n)
		}
	}
	backend.SortByDefault(names, func(n string) backend.Description { return s.backends[n].Describe() })
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// builds and buildsDockerfiles ask of a description whether the backend builds
// paddock's image, and a Dockerfile.
func builds(d backend.Description) bool            { return d.Images.Build }
func buildsDockerfiles(d backend.Description) bool { return d.Images.Dockerfile }

// Build builds a backend's sandbox image, with the CLIs of the named agents at the
// versions paddock's tests run; backendName "" is the first that builds images (docker).
func (s *Service) Build(ctx context.Context, backendName string, spec backend.ImageSpec, agentNames []string, progress func(string)) (string, error) {
	for _, name := range agentNames {
		a, err := agents.Get(name)
		if err != nil {
			return "", apperr.Invalid("run `paddock doctor` to see the agents", "%v", err)
		}
		if a.Package == "" {
			return "", apperr.Invalid("install it in an image of your own (paddock up --image, or a devcontainer)", "agent %s has no npm package paddock installs: %s", name, a.Install)
		}
		spec.NPM = append(spec.NPM, a.Package)
		spec.Node = spec.Node || a.NeedsNode
	}
	if backendName == "" {
		backendName = s.defaultBackend(builds)
	}
	b, ok := s.backends[backendName]
	if !ok {
		return "", apperr.Invalid("", "unknown backend %q", backendName)
	}
	ib, ok := b.(backend.ImageBuilder)
	if !ok || !builds(b.Describe()) {
		return "", apperr.Invalid("", "backend %s does not use images", backendName)
	}
	return ib.BuildImage(ctx, spec, progress)
}

// Dockerfile builds a Dockerfile into tag with a backend that can; backendName "" is
// the first that can (docker).
func (s *Service) Dockerfile(ctx context.Context, backendName, contextDir, dockerfile, tag string, progress func(string)) error {
	if backendName == "" {
		backendName = s.defaultBackend(buildsDockerfiles)
	}
	b, ok := s.backends[backendName]
	if !ok {
		return apperr.Invalid("", "unknown backend %q", backendName)
	}
	db, ok := b.(backend.DockerfileBuilder)
	if !ok || !buildsDockerfiles(b.Describe()) {
		return apperr.Invalid("", "backend %s does not build Dockerfiles", backendName)
	}
	if tag == "" {
		return apperr.Invalid("name the image with --tag", "a Dockerfile build needs a tag")
	}
	return db.BuildDockerfile(ctx, contextDir, dockerfile, tag, progress)
}

// Prepare turns a built image into the form the backend named format boots, ahead of
// its first sandbox (`paddock image build --format microvm`), and returns where it is.
// The format of a backend that builds images is the image as built: nothing to make.
func (s *Service) Prepare(ctx context.Context, format, image string, progress func(string)) (string, error) {
	b, ok := s.backends[format]
	if !ok {
		return "", apperr.Invalid("see `paddock doctor` for the backends", "unknown format %q: a format is the backend that boots it (%s)", format,
			backend.Which(func(d backend.Description) bool { return d.Images.Prepare }))
	}
	d := b.Describe()
	if d.Images.Build && !d.Images.Prepare {
		return image, nil
	}
	p, ok := b.(backend.ImagePreparer)
	if !ok || !d.Images.Prepare {
		return "", apperr.Invalid("", "backend %s boots the engine's image as it is: there is no format of its own to make", format)
	}
	if err := b.Available(ctx); err != nil {
		return "", err
	}
	return p.PrepareImage(ctx, image, progress)
}
