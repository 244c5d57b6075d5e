// Package vagranttest runs sandboxes of the vagrant backend on the real vagrant with its
// docker provider, for tests: a "box" image with an SSH server, and a Vagrantfile that
// runs it.
package vagranttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/testenv"
)

// BoxImage is the image the docker provider runs as a "VM": paddock's sandbox image with
// an SSH server and a vagrant user holding Vagrant's well-known key, as boxes have.
const BoxImage = "paddock/vagrant-box:test"

// DockerProvider returns the settings of a vagrant backend whose Vagrantfile runs
// BoxImage under Vagrant's docker provider, building the image when missing. Quick runs
// (go test -short) skip the test.
func DockerProvider(t testing.TB) map[string]any {
	t.Helper()
	testenv.Heavy(t, "a Vagrant machine")
	testenv.Program(t, "vagrant", "apt-get install vagrant")
	testenv.Program(t, "docker", "apt-get install docker.io")
	if err := exec.Command("docker", "image", "inspect", "paddock/sandbox:latest").Run(); err != nil {
		testenv.Missing(t, "the paddock/sandbox image", "paddock image build")
	}
	if err := exec.Command("docker", "image", "inspect", BoxImage).Run(); err != nil {
		dir := t.TempDir()
		pub, err := os.ReadFile(vagrantKey(t) + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "vagrant.pub"), pub, 0o644)
		os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(`FROM paddock/sandbox:latest
USER root
RUN apt-get update && apt-get install -y --no-install-recommends openssh-server sudo && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /run/sshd && useradd -m -s /bin/bash vagrant && echo 'vagrant ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/vagrant
COPY vagrant.pub /home/vagrant/.ssh/authorized_keys
RUN chown -R vagrant:vagrant /home/vagrant/.ssh && chmod 700 /home/vagrant/.ssh && chmod 600 /home/vagrant/.ssh/authorized_keys
CMD ["/usr/sbin/sshd", "-D", "-e"]
`), 0o644)
		if out, err := exec.Command("docker", "build", "-q", "-t", BoxImage, dir).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v %s", BoxImage, err, out)
		}
	}
	tmpl := filepath.Join(t.TempDir(), "Vagrantfile")
	os.WriteFile(tmpl, []byte(`Vagrant.configure("2") do |config|
  config.vm.synced_folder ".", "/vagrant", disabled: true
  config.vm.provider "docker" do |d|
    d.image = "`+BoxImage+`"
    d.has_ssh = true
    d.remains_running = true
  end
end
`), 0o644)
	return map[string]any{"vagrantfile": tmpl, "provider": "docker", "health_check_interval": 1}
}

// vagrantKey is the path of Vagrant's well-known insecure private key, as installed.
func vagrantKey(t testing.TB) string {
	out, err := exec.Command("sh", "-c", "ls /usr/share/rubygems-integration/all/gems/vagrant-*/keys/vagrant /opt/vagrant/embedded/gems/gems/vagrant-*/keys/vagrant 2>/dev/null | head -1").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("Vagrant's insecure key is not where Debian's vagrant puts it: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Config is a daemon config file (TOML) whose [vagrant] section is DockerProvider's.
func Config(t testing.TB) string {
	t.Helper()
	s := DockerProvider(t)
	return fmt.Sprintf("[vagrant]\nvagrantfile = %q\nprovider = %q\nhealth_check_interval = %d\n", s["vagrantfile"], s["provider"], s["health_check_interval"])
}
