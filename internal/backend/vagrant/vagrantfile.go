package vagrant

import (
	"fmt"
	"slices"
	"strings"
)

// ruby quotes s as a single-quoted Ruby string.
func ruby(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// Machine is what a generated Vagrantfile is made for.
type Machine struct {
	// Name is the sandbox's name, the VM's hostname.
	Name string
	// NPM are the npm packages the sandbox's agents and MCP servers need.
	NPM []string
}

// Generate writes the Vagrantfile of a sandbox whose project has none: the box, its
// size, VirtualBox hardened (no audio, no USB), the forwarded ports, and provisioning:
// the packages, the npm packages, the user agent (sudo without a password, in the docker
// group), then the user's provision script.
func Generate(s Settings, m Machine) string {
	pkgs := slices.Clone(s.ProvisionPackages)
	for _, p := range []string{"git", "tmux", "sudo"} { // paddock's own needs
		if !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
	}
	npm := slices.Clone(m.NPM)
	for _, p := range s.NPMPackages {
		if !slices.Contains(npm, p) {
			npm = append(npm, p)
		}
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Written by paddock for sandbox %s from the [vagrant] settings; paddock writes it again for a new sandbox.", m.Name)
	w("Vagrant.configure('2') do |config|")
	w("  config.vm.box = %s", ruby(s.Box))
	w("  config.vm.hostname = %s", ruby(m.Name))
	w("  # /vagrant is share/ beside this file, never this directory: vagrant runs this file on the")
	w("  # host, so the VM must not be able to write it. The project is cloned into /workspace.")
	w("  config.vm.synced_folder 'share', '/vagrant', type: %s", ruby(s.SyncedFolderType))
	for _, f := range s.PortForwards {
		proto := f.Protocol
		if proto == "" {
			proto = "tcp"
		}
		w("  config.vm.network 'forwarded_port', guest: %d, host: %d, protocol: %s, host_ip: '127.0.0.1'", f.Guest, f.Host, ruby(proto))
	}
	w("  config.vm.provider 'virtualbox' do |vb|")
	w("    vb.memory = %d", s.MemoryMB)
	w("    vb.cpus = %d", s.CPUs)
	w("    vb.customize ['modifyvm', :id, '--audio', 'none']")
	w("    vb.customize ['modifyvm', :id, '--usb', 'off', '--usbehci', 'off', '--usbxhci', 'off']")
	w("    vb.customize ['modifyvm', :id, '--clipboard-mode', 'disabled', '--draganddrop', 'disabled']")
	w("  end")
	w("  config.vm.provider 'libvirt' do |lv|")
	w("    lv.memory = %d", s.MemoryMB)
	w("    lv.cpus = %d", s.CPUs)
	w("  end")
	w("  config.vm.provision 'shell', name: 'paddock', inline: <<~'SHELL'")
	w("    set -e")
	w("    export DEBIAN_FRONTEND=noninteractive")
	w("    apt-get update -q")
	w("    apt-get install -y -q %s", strings.Join(pkgs, " "))
	if len(npm) > 0 {
		w("    npm install -g %s", strings.Join(npm, " "))
	}
	w("    id agent >/dev/null 2>&1 || useradd -m -s /bin/bash agent")
	w("    getent group docker >/dev/null && usermod -aG docker agent")
	w("    echo 'agent ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/paddock-agent")
	w("    chmod 440 /etc/sudoers.d/paddock-agent")
	w("  SHELL")
	if s.ProvisionScript != "" {
		w("  config.vm.provision 'shell', name: 'user', path: %s", ruby(s.ProvisionScript))
	}
	w("end")
	return b.String()
}
