package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend/vagrant/vagranttest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestVagrantRecovery: a sandbox on real Vagrant (docker provider) whose machine dies
// behind paddock's back shows it in `ls`, and `paddock restart SANDBOX/SESSION` brings the
// machine back with vagrant, the guest in it, and the session, with the workspace as it
// was; stop halts it (the docker provider cannot suspend), start brings it up again, rm
// destroys it.
func TestVagrantRecovery(t *testing.T) {
	t.Parallel()
	if !dockerReady() {
		testenv.Missing(t, "no docker engine with the paddock/sandbox image", "make setup")
	}
	config := vagranttest.Config(t)
	h, repo := e2eHome(t)
	home := h.Dir
	os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600)
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo, "--backend", "vagrant")
	must("", "exec", "repo", "--", "sh", "-c", "echo kept > /workspace/work.txt")
	must("", "chat", "repo", "--new", "w", "--agent", "shell", "--command", "sleep 100000")
	if out := must("", "exec", "repo", "--", "sh", "-c", "id -un; sudo -n id -un"); out != "agent\nroot\n" {
		t.Fatalf("the agent in the machine: %q", out)
	}

	// The machine's container: the docker provider names it after the directory of its
	// Vagrantfile, the sandbox's own (other tests run machines at the same time).
	var id string
	entries, _ := os.ReadDir(filepath.Join(home, "sandboxes", "vagrant"))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			id = e.Name()
		}
	}
	container := func() string {
		out, _ := exec.Command("docker", "ps", "-a", "--filter", "name=^"+id+"_default_", "--format", "{{.Names}}").Output()
		return strings.TrimSpace(string(out))
	}
	name := container()
	if name == "" || strings.Contains(name, "\n") {
		t.Fatalf("the machine's container: %q", name)
	}
	// The machine dies (its container killed): ls says so once the health check looks again.
	if out, err := exec.Command("docker", "kill", name).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v %s", err, out)
	}
	waitUntil(t, 30*time.Second, "ls to show the machine down", func() bool {
		out := must("", "ls")
		return strings.Contains(out, "stopped") && strings.Contains(out, "VM powered off")
	})
	_, errOut, code := paddock("", "restart", "repo/w")
	if code != 0 || !strings.Contains(errOut, "repo is stopped: VM powered off; starting it") {
		t.Fatalf("restart: exit %d %s", code, errOut)
	}
	if out := must("", "exec", "repo", "--", "cat", "/workspace/work.txt"); out != "kept\n" {
		t.Errorf("the workspace after recovery: %q", out)
	}
	if out := must("", "chat", "repo", "--list"); !strings.Contains(out, "w ") || strings.Contains(out, "exited") {
		t.Errorf("the session after recovery:\n%s", out)
	}

	must("", "stop", "repo")
	if out := must("", "ls"); !strings.Contains(out, "stopped") {
		t.Errorf("after stop:\n%s", out)
	}
	must("", "start", "repo")
	if out := must("", "exec", "repo", "--", "cat", "/workspace/work.txt"); out != "kept\n" {
		t.Errorf("the workspace after stop and start: %q", out)
	}
	must("", "rm", "repo", "--force", "--purge") // returns at once: the machine goes in the background
	waitUntil(t, 60*time.Second, "the machine destroyed", func() bool { return container() == "" })
}
