package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend/kubernetes/k8stest"
)

// TestClaudeEndToEndKubernetes is the Claude end-to-end test on the real single-node
// cluster: the sandbox a pod, the image loaded into the node's containerd, the guest
// copied in through the API server's exec.
func TestClaudeEndToEndKubernetes(t *testing.T) {
	t.Parallel()
	claudeEndToEnd(t, "kubernetes", k8stest.Config(t))
}

// TestKubernetesSandbox: what a user does with a sandbox on Kubernetes, through the CLI:
// up (in the configured namespace, or the one --namespace names), exec, sync back to the
// host repo, stop and start keeping the workspace, a pod lost behind paddock's back shown
// by ls and made again by start, rm leaving nothing; bad input refused with nothing made.
func TestKubernetesSandbox(t *testing.T) {
	t.Parallel()
	config := k8stest.Config(t)
	h, repo := e2eHome(t)
	home := h.Dir
	os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600)
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	kubectl := func(args ...string) string {
		out, _ := k8stest.Kubectl(t, args...).CombinedOutput()
		return string(out)
	}

	// Refused, nothing made: a process limit (the kubelet's, for every pod), an unknown
	// context, a namespace that cannot be one.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--pids", "100"}, "cannot limit one sandbox's processes"},
		{[]string{"--kube-context", "nope"}, `no context "nope"`},
		{[]string{"--namespace", "Not_A_Name"}, "not a namespace name"},
		{[]string{"--backend", "bwrap", "--namespace", "x"}, "--namespace is not for the bwrap backend"},
	} {
		args := append([]string{"up", repo, "--backend", "kubernetes"}, c.args...)
		if c.args[0] == "--backend" {
			args = append([]string{"up", repo}, c.args...)
		}
		_, errOut, code := paddock("", args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("up %v: exit %d, %s; want it refused with %q", c.args, code, errOut, c.want)
		}
		if out := must("", "ls"); strings.Contains(out, "repo") {
			t.Fatalf("a refused up left a sandbox:\n%s", out)
		}
	}

	ns := "paddock-e2e-" + strings.ToLower(filepath.Base(home))[:6]
	ns = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, ns)
	t.Cleanup(func() { kubectl("delete", "namespace", ns, "--wait=false") })
	must("", "up", repo, "--backend", "kubernetes", "--namespace", ns)
	if out := kubectl("-n", ns, "get", "pods,pvc,networkpolicy", "-l", "app.kubernetes.io/managed-by=paddock", "-o", "name"); strings.Count(out, "\n") != 3 {
		t.Fatalf("in namespace %s:\n%s", ns, out)
	}
	must("", "exec", "repo", "--", "sh", "-c", "echo kept > /workspace/work.txt && git add work.txt && git -c user.name=a -c user.email=a@b commit -qm work")
	must("", "sync", "repo")
	if out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%s", "refs/paddock/repo/main").Output(); err != nil || string(out) != "work\n" {
		t.Fatalf("sync from the pod: %q %v", out, err)
	}

	must("", "stop", "repo")
	if out := kubectl("-n", ns, "get", "pods", "-o", "name"); strings.Contains(out, "paddock-") {
		t.Fatalf("the pod is still there after stop: %s", out)
	}
	if out := kubectl("-n", ns, "get", "pvc", "-o", "name"); !strings.Contains(out, "paddock-") {
		t.Fatalf("the claim is gone after stop: %s", out)
	}
	must("", "start", "repo")
	if out := must("", "exec", "repo", "--", "cat", "/workspace/work.txt"); out != "kept\n" {
		t.Fatalf("the workspace after stop and start: %q", out)
	}

	// The pod lost (as to an eviction or a node gone): ls says so and what to do; start
	// makes it again from the claim.
	kubectl("-n", ns, "delete", "pods", "-l", "app.kubernetes.io/managed-by=paddock", "--grace-period=0", "--wait=true")
	waitUntil(t, 30*time.Second, "ls to show the pod lost", func() bool {
		return strings.Contains(must("", "ls"), "is gone")
	})
	var infos []struct{ Name, State, Detail string }
	json.Unmarshal([]byte(must("", "ls", "--json")), &infos)
	if len(infos) != 1 || infos[0].State != "error" || !strings.Contains(infos[0].Detail, "paddock start") {
		t.Fatalf("ls --json with the pod lost: %+v", infos)
	}
	must("", "start", "repo")
	if out := must("", "exec", "repo", "--", "cat", "/workspace/work.txt"); out != "kept\n" {
		t.Fatalf("the workspace after the pod was made again: %q", out)
	}

	must("", "rm", "repo", "--force", "--purge")
	waitUntil(t, 60*time.Second, "nothing left in the namespace", func() bool {
		return strings.TrimSpace(kubectl("-n", ns, "get", "pods,pvc,networkpolicy", "-o", "name")) == ""
	})
}

// TestKubernetesImageLoad: `paddock image load IMAGE --backend kubernetes` puts a local
// docker image into the node's containerd, where a pod with imagePullPolicy Never finds it.
func TestKubernetesImageLoad(t *testing.T) {
	t.Parallel()
	config := k8stest.Config(t)
	h, _ := e2eHome(t)
	home := h.Dir
	os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600)
	// A tiny image of one file, made here.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("loaded\n"), 0o644)
	tag := "paddock-test/tiny:" + strings.ToLower(filepath.Base(dir))
	tar := exec.Command("tar", "-C", dir, "-c", ".")
	imp := exec.Command("docker", "import", "-", tag)
	imp.Stdin, _ = tar.StdoutPipe()
	tar.Start()
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v %s", err, out)
	}
	tar.Wait()
	t.Cleanup(func() { exec.Command("docker", "rmi", tag).Run() })
	paddock := newPaddock(h)
	_, errOut, code := paddock("", "image", "load", tag, "--backend", "kubernetes")
	if code != 0 || !strings.Contains(errOut, "loaded "+tag) {
		t.Fatalf("image load: exit %d %s", code, errOut)
	}
	state, _ := k8stest.State(t)
	out, err := exec.Command("ctr", "--address", filepath.Join(state, "run", "containerd.sock"), "-n", "k8s.io", "images", "ls", "-q").Output()
	if err != nil || !strings.Contains(string(out), "docker.io/"+tag) {
		t.Fatalf("the node's containerd after image load: %v\n%s", err, out)
	}
	exec.Command("ctr", "--address", filepath.Join(state, "run", "containerd.sock"), "-n", "k8s.io", "images", "rm", "docker.io/"+tag).Run()
	// Refused: a backend with nothing to load into, and no backend.
	if _, errOut, code := paddock("", "image", "load", tag, "--backend", "bwrap"); code == 0 || !strings.Contains(errOut, "nothing to load") {
		t.Errorf("image load --backend bwrap: exit %d %s", code, errOut)
	}
	if _, errOut, code := paddock("", "image", "load", tag); code == 0 || !strings.Contains(errOut, "--backend kubernetes") {
		t.Errorf("image load with no backend: exit %d %s", code, errOut)
	}
}
