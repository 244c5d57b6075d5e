package kubernetes_test

import (
	"context"
	"strings"
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
func newBackend(t testing.TB) (*kubernetes.Kubernetes, sandbox.AgentBinary) {
	t.Helper()
	b, err := kubernetes.New(backend.Env{Dir: t.TempDir(), Options: k8stest.Options(t, "")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, b.Namespace()) })
	k8stest.LoadImage(t, b, kubernetes.DefaultImage)
	if err := b.Available(context.Background()); err != nil {
		t.Fatalf("the test cluster must serve the backend: %v", err)
	}
	agent, err := sandbox.InstallAgent(k8stest.Guest(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b, agent
}

func TestConformance(t *testing.T) {
	b, agent := newBackend(t)
	backendtest.Run(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "conf-" + string(id), AgentBinary: agent.Path, AgentSHA256: agent.SHA256}
		},
		PidsLimit: k8stest.PodPidsLimit,
		Leftovers: func(id backend.ID) []string { return leftovers(t, clientset(t), b.Namespace(), id) },
		Dir:       b.Dir(),
		Allows:    runtimeAllows(t),
	})
}

// deleteNamespace removes a test's namespace, and what is left in it.
func deleteNamespace(t testing.TB, ns string) {
	clientset(t).CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
}

// runtimeAllows is what the node's container runtime's RuntimeDefault seccomp profile
// lets through that the conformance suite's kernel check refuses: io_uring under
// containerd before 1.7, whose default profile allows it (the runtime's filter, not
// paddock's, as on Docker Engine before 25).
func runtimeAllows(t *testing.T) map[string]string {
	nodes, err := clientset(t).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("the cluster's nodes: %v", err)
	}
	rt := nodes.Items[0].Status.NodeInfo.ContainerRuntimeVersion // containerd://1.6.20
	v, ok := strings.CutPrefix(rt, "containerd://")
	major, minor, _ := strings.Cut(v, ".")
	minor, _, _ = strings.Cut(minor, ".")
	if ok && major == "1" && (minor == "6" || minor == "5") {
		return map[string]string{"io_uring_setup": "the node runs " + rt + ", whose RuntimeDefault seccomp profile allows io_uring (containerd 1.7 and later refuse it)"}
	}
	return nil
}
