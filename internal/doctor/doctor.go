// Package doctor checks what the daemon can run here: each backend (available or not,
// why, how to fix it, what it enforces) and each agent's CLI, for GET /v1/doctor,
// `paddock doctor` and the TUI's choice of a backend.
package doctor

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"sort"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/backend"
)

// Sandboxes is what the doctor needs of the sandbox service: the backend a sandbox
// gets when it names none.
type Sandboxes interface {
	PickBackend(ctx context.Context, name string) (backend.Backend, error)
}

// Service checks the daemon's backends and the agents' CLIs.
type Service struct {
	backends  map[string]backend.Backend
	sandboxes Sandboxes
}

// New returns the doctor of the daemon's backends, by name.
func New(backends map[string]backend.Backend, sandboxes Sandboxes) *Service {
	return &Service{backends: backends, sandboxes: sandboxes}
}

// Backends checks every backend this daemon has.
func (s *Service) Backends(ctx context.Context) []wire.BackendReport {
	var out []wire.BackendReport
	def, _ := s.sandboxes.PickBackend(ctx, "")
	for name, b := range s.backends {
		d := b.Describe()
		r := wire.BackendReport{Name: name, Available: true, Default: def != nil && def.Name() == name, HostSystem: d.HostSystem,
			Isolation: d.Isolation, Preference: d.Default, Emulated: d.Emulated, Slow: d.Slow, BuildsImages: d.Images.Build}
		if err := b.Available(ctx); err != nil {
			r.Available = false
			r.Reason = err.Error()
			var ue *backend.UnavailableError
			if errors.As(err, &ue) {
				r.Reason, r.Fix = ue.Reason, ue.Fix
			}
		}
		if rs, ok := b.(backend.RuntimeSelector); ok && d.Runtimes && r.Available {
			r.Runtimes = rs.Runtimes(ctx)
		}
		if rp, ok := b.(backend.Reporter); ok && r.Available {
			r.Findings = rp.Report(ctx)
		}
		r.VM = d.OwnKernel && r.Available
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// sandboxPATH is the PATH inside a host-directories sandbox: only /usr and the merged
// /bin and /sbin are there.
var sandboxPATH = []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"}

// Agents reports each agent's CLI.
func (s *Service) Agents() []wire.AgentReport {
	var out []wire.AgentReport
	for _, name := range agents.Names() {
		a, err := agents.Get(name)
		if err != nil {
			continue
		}
		r := wire.AgentReport{Name: name, Binary: a.Binary, Install: a.Install, Status: a.Status.Source, Tested: a.Tested, Disposable: a.Memory != ""}
		for _, dir := range sandboxPATH {
			p := filepath.Join(dir, a.Binary)
			if _, err := exec.LookPath(p); err == nil {
				r.Available, r.Path = true, p
				break
			}
		}
		out = append(out, r)
	}
	return out
}
