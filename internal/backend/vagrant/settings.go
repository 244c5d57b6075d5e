package vagrant

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/paddockhq/paddock/internal/backend"
)

// Settings are the config's [vagrant] section (also accepted as [backends.vagrant]).
type Settings struct {
	// MemoryMB and CPUs size the VM.
	MemoryMB int `toml:"memory_mb"`
	CPUs     int `toml:"cpus"`
	// Box is the Vagrant box of a generated Vagrantfile.
	Box string `toml:"box"`
	// AutoSuspend makes `paddock stop` suspend the VM (its memory kept, `vagrant resume`
	// brings it back) rather than halt it; a provider that cannot suspend halts.
	AutoSuspend bool `toml:"auto_suspend"`
	// AutoDestroy makes `paddock rm` destroy a VM of the project's own Vagrantfile too;
	// without it such a VM is halted and left to the user. A VM of a Vagrantfile paddock
	// wrote is always destroyed with its sandbox.
	AutoDestroy bool `toml:"auto_destroy"`
	// HostGatewayIP is the host's address as the VM sees it (VirtualBox NAT: 10.0.2.2).
	HostGatewayIP string `toml:"host_gateway_ip"`
	// SyncedFolderType is the type of the generated Vagrantfile's /vagrant folder.
	SyncedFolderType string `toml:"synced_folder_type"`
	// ProvisionPackages are the Debian/Ubuntu packages a generated Vagrantfile installs;
	// setting it replaces the default list (tmux and git are always added: paddock needs them).
	ProvisionPackages []string `toml:"provision_packages"`
	// NPMPackages are installed with npm -g besides the agents' CLIs and the packages of
	// stdio MCP servers run with `npx -y PKG`, which always are.
	NPMPackages []string `toml:"npm_packages"`
	// ProvisionScript is a host path run in the VM as a shell provisioner.
	ProvisionScript string `toml:"provision_script"`
	// Vagrantfile is a host path of the user's own template, copied instead of generating.
	Vagrantfile string `toml:"vagrantfile"`
	// ProjectVagrantfile uses a project's own Vagrantfile, where it is, instead of
	// generating one. Off by default: a project's Vagrantfile usually shares the project
	// itself with the VM, where the agent (with sudo) could write the host's checkout and
	// its .git/hooks, which the user's own git would then run.
	ProjectVagrantfile bool `toml:"project_vagrantfile"`
	// HealthCheckInterval is how long, in seconds, a VM's state as `vagrant status` said
	// it is trusted before asking again.
	HealthCheckInterval int `toml:"health_check_interval"`
	// PortForwards are forwarded ports of a generated Vagrantfile.
	PortForwards []PortForward `toml:"port_forwards"`
	// Env are variables added to every process of the sandbox (sessions included).
	Env map[string]string `toml:"env"`
	// Provider is the Vagrant provider to use (virtualbox, libvirt, docker...); empty
	// leaves the choice to Vagrant (VAGRANT_DEFAULT_PROVIDER, then its own default).
	Provider string `toml:"provider"`
}

// PortForward is one [[vagrant.port_forwards]] entry.
type PortForward struct {
	Guest    int    `toml:"guest"`
	Host     int    `toml:"host"`
	Protocol string `toml:"protocol"`
}

// DefaultPackages are the packages a generated Vagrantfile installs unless
// provision_packages says otherwise.
var DefaultPackages = []string{"docker.io", "nodejs", "npm", "git", "unzip", "curl", "build-essential"}

// DefaultSettings are the settings with nothing configured.
func DefaultSettings() Settings {
	return Settings{MemoryMB: 4096, CPUs: 2, Box: "bento/ubuntu-24.04", AutoSuspend: true, HostGatewayIP: "10.0.2.2",
		SyncedFolderType: "virtualbox", ProvisionPackages: DefaultPackages, HealthCheckInterval: 60}
}

// packageName is what a package name (apt or npm, with an npm scope and version) may
// hold: they go into a shell script.
var packageName = regexp.MustCompile(`^@?[A-Za-z0-9][A-Za-z0-9._+/@^~:-]*$`)

// envName is a variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseSettings reads the options of the config's [vagrant] table over the defaults,
// refusing unknown keys and values that cannot work.
func ParseSettings(opts map[string]any) (Settings, error) {
	s := DefaultSettings()
	if err := backend.DecodeOptions("vagrant", opts, &s); err != nil {
		return s, err
	}
	return s, s.validate()
}

func (s Settings) validate() error {
	switch {
	case s.MemoryMB < 256:
		return fmt.Errorf("vagrant: memory_mb is at least 256, not %d", s.MemoryMB)
	case s.CPUs < 1:
		return fmt.Errorf("vagrant: cpus is at least 1, not %d", s.CPUs)
	case s.Box == "" && s.Vagrantfile == "":
		return errors.New("vagrant: box is empty")
	case s.HealthCheckInterval < 1:
		return fmt.Errorf("vagrant: health_check_interval is at least 1 (second), not %d", s.HealthCheckInterval)
	}
	for _, p := range append(append([]string(nil), s.ProvisionPackages...), s.NPMPackages...) {
		if !packageName.MatchString(p) {
			return fmt.Errorf("vagrant: %q is not a package name", p)
		}
	}
	for _, f := range s.PortForwards {
		if f.Guest < 1 || f.Guest > 65535 || f.Host < 1 || f.Host > 65535 {
			return fmt.Errorf("vagrant: port_forwards: ports are 1 to 65535, not guest %d host %d", f.Guest, f.Host)
		}
		if f.Protocol != "" && f.Protocol != "tcp" && f.Protocol != "udp" {
			return fmt.Errorf("vagrant: port_forwards: protocol is tcp or udp, not %q", f.Protocol)
		}
	}
	for k := range s.Env {
		if !envName.MatchString(k) {
			return fmt.Errorf("vagrant: env: %q is not a variable name", k)
		}
	}
	for _, p := range []struct{ key, path string }{{"provision_script", s.ProvisionScript}, {"vagrantfile", s.Vagrantfile}} {
		if p.path != "" && !filepath.IsAbs(p.path) {
			return fmt.Errorf("vagrant: %s must be an absolute path, not %q", p.key, p.path)
		}
	}
	return nil
}
