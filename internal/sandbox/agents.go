package sandbox

import (
	"os/exec"
	"path/filepath"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
)

// AgentReport is wire.AgentReport (the API's wire type).
type AgentReport = wire.AgentReport

// sandboxPATH is the PATH inside a host-directories sandbox: only /usr and the merged
// /bin and /sbin are there.
var sandboxPATH = []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"}

// Agents reports each agent's CLI.
func (s *Service) Agents() []AgentReport {
	var out []AgentReport
	for _, name := range agents.Names() {
		a, err := agents.Get(name)
		if err != nil {
			continue
		}
		r := AgentReport{Name: name, Install: a.Install, Status: a.Status.Source, Tested: a.Tested, Disposable: a.Memory != ""}
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
