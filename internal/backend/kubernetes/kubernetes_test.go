package kubernetes_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/kubernetes"
	"github.com/paddockhq/paddock/internal/backend/kubernetes/k8stest"
	"github.com/paddockhq/paddock/internal/sandbox"
)

// newBackend is the backend on the test cluster, in a namespace of its own, with the
// sandbox image loaded, and the guest to inject.
func newBackend(t testing.TB) (*kubernetes.Kubernetes, sandbox.GuestBinary) {
	t.Helper()
	return newBackendWith(t, k8stest.Options(t, ""))
}

// newBackendWith is newBackend with the options given.
func newBackendWith(t testing.TB, opts map[string]any) (*kubernetes.Kubernetes, sandbox.GuestBinary) {
	t.Helper()
	b, err := kubernetes.New(backend.Env{Dir: t.TempDir(), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, b.Namespace()) })
	k8stest.LoadImage(t, b, kubernetes.DefaultImage)
	if err := b.Available(context.Background()); err != nil {
		t.Fatalf("the test cluster must serve the backend: %v", err)
	}
	agent, err := sandbox.InstallGuest(k8stest.Guest(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b, agent
}

// TestConformance runs the suite with what the backend expects of its pods, as `paddock
// verify` does: the config names no pids_limit, so the process limit is read from the
// kubelet (the test cluster's podPidsLimit), and the nodes' containerd version says
// whether its seccomp profile lets io_uring through.
func TestConformance(t *testing.T) {
	opts := k8stest.Options(t, "")
	delete(opts, "pids_limit")
	b, agent := newBackendWith(t, opts)
	expect := backend.ExpectOf(context.Background(), b, "")
	if expect.PidsLimit != k8stest.PodPidsLimit {
		t.Fatalf("Expect: pids limit %d, want the kubelet's podPidsLimit %d", expect.PidsLimit, k8stest.PodPidsLimit)
	}
	backendtest.Run(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "conf-" + string(id), GuestBinary: agent.Path, GuestSHA256: agent.SHA256}
		},
		PidsLimit: expect.PidsLimit,
		Leftovers: b.Leftovers, // what verify looks for
		Dir:       b.Dir(),
		Allows:    expect.Allows,
	})
}

// deleteNamespace removes a test's namespace, and what is left in it.
func deleteNamespace(t testing.TB, ns string) {
	clientset(t).CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
}
