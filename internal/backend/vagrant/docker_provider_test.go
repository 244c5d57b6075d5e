package vagrant_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/vagrant"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestMain lets this test binary serve as the guest inside machines, and as the fake
// vagrant (fake_vagrant_test.go).
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "paddock":
		os.Exit(cli.Main())
	case "vagrant":
		os.Exit(fakeVagrant(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// BoxImage is the image the docker provider runs as a "VM": paddock's sandbox image with
// an SSH server and a vagrant user holding Vagrant's well-known key, as boxes have.
const BoxImage = "paddock/vagrant-box:test"

// dockerProvider returns the settings of a vagrant backend whose Vagrantfile runs
// BoxImage under Vagrant's docker provider, building the image when missing.
func dockerProvider(t testing.TB) map[string]any {
	t.Helper()
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

func guestBinary(t testing.TB) sandbox.AgentBinary {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agent, err := sandbox.InstallAgent(self, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return agent
}

// TestDockerProviderLifecycle: a sandbox on real Vagrant with its docker provider comes
// up, runs a command through the guest over SSH, halts to stopped, comes up again with
// its files, and is destroyed to nothing.
func TestDockerProviderLifecycle(t *testing.T) {
	opts := dockerProvider(t)
	b, err := vagrant.New(backend.Env{Dir: t.TempDir(), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	agent := guestBinary(t)
	ctx := context.Background()
	id := backend.ID("lc" + strings.ToLower(t.Name()[len(t.Name())-4:]))
	if err := b.Create(ctx, backend.Spec{ID: id, Name: "life", AgentBinary: agent.Path, AgentSHA256: agent.SHA256}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), id) })
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	conn, err := b.Dial(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// TestConformance runs the backend conformance suite on real Vagrant with its docker
// provider.
func TestConformance(t *testing.T) {
	opts := dockerProvider(t)
	dir := t.TempDir()
	b, err := vagrant.New(backend.Env{Dir: dir, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	agent := guestBinary(t)
	backendtest.Run(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "conf-" + string(id), AgentBinary: agent.Path, AgentSHA256: agent.SHA256}
		},
		Dir: dir,
		Leftovers: func(id backend.ID) []string {
			out, _ := exec.Command("docker", "ps", "-a", "--filter", "name="+string(id)+"_", "--format", "{{.Names}}").Output()
			return strings.Fields(string(out))
		},
		Machine: "a Vagrant VM, where the agent has sudo and the VM's own network (docs/security.md)",
	})
}
