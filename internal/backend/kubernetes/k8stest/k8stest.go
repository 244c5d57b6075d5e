// Package k8stest gives tests the real single-node cluster scripts/k8s-up.sh brings up
// (make test does, and tears it down after): its kubeconfig, the backend's options for
// it, and the sandbox image loaded into its containerd.
package k8stest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/kubernetes"
	"github.com/paddockhq/paddock/internal/testenv"
)

// PodPidsLimit is the test cluster's kubelet podPidsLimit (scripts/k8s-up.sh).
const PodPidsLimit = 512

// State returns the test cluster's state directory and kubeconfig, or skips (fails
// under PADDOCK_TEST_STRICT) when no cluster is up for the tests.
// Under go test -short (make test-quick) it skips: the cluster is left out. While
// scripts/test.sh brings the cluster up beside the tests, it waits for that first.
func State(tb testing.TB) (state, kubeconfig string) {
	tb.Helper()
	testenv.Heavy(tb, "the Kubernetes cluster")
	kubeconfig = os.Getenv("PADDOCK_TEST_KUBECONFIG")
	state = os.Getenv("PADDOCK_TEST_K8S_STATE")
	if kubeconfig == "" || state == "" {
		testenv.Missing(tb, "a Kubernetes cluster for the tests (PADDOCK_TEST_KUBECONFIG, PADDOCK_TEST_K8S_STATE)",
			"run the tests with make test, which brings one up with scripts/k8s-up.sh (as root)")
	}
	if status := waitForCluster(); status != "up" {
		testenv.Missing(tb, "the Kubernetes cluster for the tests ("+status+")",
			"read scripts/k8s-up.sh's output in "+strings.TrimSuffix(os.Getenv(WaitEnv), ".status")+".log")
	}
	return state, kubeconfig
}

// WaitEnv names the file scripts/test.sh writes "up" or "failed" into once the cluster
// it brings up in the background is up or has failed; unset, the cluster is up already.
const WaitEnv = "PADDOCK_TEST_K8S_WAIT"

var (
	waitOnce   sync.Once
	waitStatus string
)

// waitForCluster waits (once per test binary, at most 15 minutes) for WaitEnv's file and
// returns what it says.
func waitForCluster() string {
	waitOnce.Do(func() {
		file := os.Getenv(WaitEnv)
		if file == "" {
			waitStatus = "up"
			return
		}
		for deadline := time.Now().Add(15 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
			if b, err := os.ReadFile(file); err == nil {
				waitStatus = strings.TrimSpace(string(b))
				if waitStatus != "up" {
					waitStatus = "its bring-up " + waitStatus
				}
				return
			}
		}
		waitStatus = "not up after 15 minutes"
	})
	return waitStatus
}

// Options are the backend's options for the test cluster, in a namespace of the test's
// own ("paddock-test-" and a random suffix, unless given).
func Options(tb testing.TB, namespace string) map[string]any {
	tb.Helper()
	state, kubeconfig := State(tb)
	if namespace == "" {
		b := make([]byte, 3)
		rand.Read(b)
		namespace = "paddock-test-" + hex.EncodeToString(b)
	}
	return map[string]any{"kubeconfig": kubeconfig, "namespace": namespace, "pids_limit": PodPidsLimit,
		"containerd_socket": filepath.Join(state, "run", "containerd.sock"), "start_timeout": 120}
}

var loadMu sync.Mutex

// LoadImage makes sure the docker image ref is in the test cluster's containerd, as
// `paddock image load --backend kubernetes` puts it there: once per image ID, whatever
// the test binaries running at once (a lock file in the cluster's state directory).
func LoadImage(tb testing.TB, b *kubernetes.Kubernetes, ref string) {
	tb.Helper()
	state, _ := State(tb)
	out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", ref).Output()
	if err != nil {
		tb.Fatalf("no docker image %s to load into the cluster: %v", ref, err)
	}
	id := strings.TrimSpace(string(out))
	loadMu.Lock()
	defer loadMu.Unlock()
	marker := filepath.Join(state, "loaded-"+strings.NewReplacer("/", "_", ":", "_").Replace(ref))
	lock, err := os.OpenFile(marker+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		tb.Fatal(err)
	}
	if got, err := os.ReadFile(marker); err == nil && string(got) == id {
		return
	}
	if err := b.LoadImage(context.Background(), ref, func(s string) { tb.Log(s) }); err != nil {
		tb.Fatalf("load %s into the cluster: %v", ref, err)
	}
	if err := os.WriteFile(marker, []byte(id), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// Guest builds the small guest (cmd/paddock-guest, as `make build` does) once per test
// binary and returns its path: what the daemon injects into pods, a twelfth of the test
// binary's size to copy through the API server.
func Guest(tb testing.TB) string {
	tb.Helper()
	path, err := testenv.SmallGuest()
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// Kubectl is the test cluster's kubectl (built with it by scripts/k8s-up.sh), with the
// cluster's kubeconfig, as a command to run.
func Kubectl(tb testing.TB, args ...string) *exec.Cmd {
	tb.Helper()
	_, kubeconfig := State(tb)
	cache := os.Getenv("PADDOCK_K8S_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "paddock-k8s", "v1.36.3")
	}
	cmd := exec.Command(filepath.Join(cache, "bin", "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	return cmd
}

// Config is a daemon's config file (TOML) for the test cluster: the small guest as the
// binary injected into pods, and the backend's options, in a namespace of the test's own,
// removed when the test ends. The sandbox image is loaded first.
func Config(tb testing.TB) string {
	tb.Helper()
	opts := Options(tb, "")
	b, err := kubernetes.New(backendEnv(opts))
	if err != nil {
		tb.Fatal(err)
	}
	LoadImage(tb, b, kubernetes.DefaultImage)
	ns := opts["namespace"].(string)
	tb.Cleanup(func() { Kubectl(tb, "delete", "namespace", ns, "--wait=false").Run() })
	return fmt.Sprintf("guest_binary = %q\n[backends.kubernetes]\nkubeconfig = %q\nnamespace = %q\npids_limit = %d\ncontainerd_socket = %q\nstart_timeout = %d\n",
		Guest(tb), opts["kubeconfig"], ns, opts["pids_limit"], opts["containerd_socket"], opts["start_timeout"])
}

func backendEnv(opts map[string]any) backend.Env { return backend.Env{Options: opts} }
