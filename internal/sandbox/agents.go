package sandbox

import (
	"os/exec"
	"path/filepath"

	"github.com/paddockhq/paddock/internal/agents"
)

// AgentReport says whether an agent CLI can run in a sandbox that sees the host's /usr
// (the bwrap backend without a rootfs), and how to get it if not.
type AgentReport struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Path      string `json:"path,omitempty"`
	Install   string `json:"install,omitempty"`
	Status    string `json:"status_source"`
	// Tested says what paddock's own tests run of the agent, for real or not.
	Tested string `json:"tested"`
	// Disposable is true when the agent can be told its sandbox is disposable (it reads a
	// memory file).
	Disposable bool `json:"disposable"`
}

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
