package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/paddockhq/paddock/internal/backend"
)

var _ backend.Expecter = (*Kubernetes)(nil)

// Expect implements backend.Expecter from what the cluster says of its nodes: the
// process limit every pod has (podPidsLimit), and what the nodes' container runtime's
// RuntimeDefault seccomp profile lets a pod do that the checks try: io_uring under
// containerd before 1.7 (the runtime's filter, not paddock's, as on Docker Engine
// before 25). Under a RuntimeClass (gVisor's) nothing is let through that way. A
// cluster that cannot be reached expects what the config says.
func (k *Kubernetes) Expect(ctx context.Context, runtime string) backend.Expect {
	e := backend.Expect{PidsLimit: k.podPidsLimit(ctx)}
	if k.settings.RuntimeClass != "" {
		return e
	}
	c, err := k.cluster(k.settings.Context)
	if err != nil {
		return e
	}
	var nodes corev1.NodeList
	if err := list(ctx, c.api.core, "", "nodes", &metav1.ListOptions{}, &nodes); err != nil {
		return e
	}
	for _, n := range nodes.Items {
		if why := runtimeAllowsIOUring(n.Status.NodeInfo.ContainerRuntimeVersion); why != "" {
			e.Allows = map[string]string{"io_uring_setup": why}
		}
	}
	return e
}

// podPidsLimit is the process limit of every pod: pids_limit in [backends.kubernetes],
// else the one the nodes' kubelets say (their podPidsLimit, read from their configz
// through the API server once), else 0, not known.
func (k *Kubernetes) podPidsLimit(ctx context.Context) int64 {
	if k.settings.PidsLimit > 0 {
		return k.settings.PidsLimit
	}
	k.mu.Lock()
	got := k.kubeletPids
	k.mu.Unlock()
	if got == 0 {
		got = k.readKubeletPids(ctx)
		k.mu.Lock()
		k.kubeletPids = got
		k.mu.Unlock()
	}
	return max(got, 0)
}

// readKubeletPids asks every node's kubelet for its podPidsLimit: the one they all
// have, or -1 (none, they differ, or one does not say).
func (k *Kubernetes) readKubeletPids(ctx context.Context) int64 {
	c, err := k.cluster(k.settings.Context)
	if err != nil {
		return -1
	}
	var nodes corev1.NodeList
	if err := list(ctx, c.api.core, "", "nodes", &metav1.ListOptions{}, &nodes); err != nil || len(nodes.Items) == 0 {
		return -1
	}
	var limit int64
	for _, n := range nodes.Items {
		l, ok := kubeletPidsLimit(ctx, c, n.Name)
		if !ok || (limit != 0 && l != limit) {
			return -1
		}
		limit = l
	}
	return limit
}

// runtimeAllowsIOUring says why a node's container runtime (its version as the node
// reports it: "containerd://1.6.20") lets io_uring through its RuntimeDefault seccomp
// profile, or "" when it does not.
func runtimeAllowsIOUring(rt string) string {
	v, ok := strings.CutPrefix(rt, "containerd://")
	if !ok {
		return ""
	}
	major, rest, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	minorS, _, _ := strings.Cut(rest, ".")
	maj, err1 := strconv.Atoi(major)
	minor, err2 := strconv.Atoi(minorS)
	if err1 != nil || err2 != nil || maj != 1 || minor >= 7 {
		return ""
	}
	return "the nodes run " + rt + ", whose RuntimeDefault seccomp profile allows io_uring (containerd 1.7 and later refuse it)"
}

// kubeletPidsLimit is a node's kubelet podPidsLimit, from its configz through the API
// server's node proxy, when it says one (unlimited, -1, is none).
func kubeletPidsLimit(ctx context.Context, c *cluster, node string) (int64, bool) {
	raw, err := c.api.core.Get().Resource("nodes").Name(node).SubResource("proxy").Suffix("configz").DoRaw(ctx)
	if err != nil {
		return 0, false
	}
	var cz struct {
		KubeletConfig struct {
			PodPidsLimit *int64 `json:"podPidsLimit"`
		} `json:"kubeletconfig"`
	}
	if json.Unmarshal(raw, &cz) != nil || cz.KubeletConfig.PodPidsLimit == nil || *cz.KubeletConfig.PodPidsLimit <= 0 {
		return 0, false
	}
	return *cz.KubeletConfig.PodPidsLimit, true
}

// Leftovers lists what a destroyed sandbox left in the cluster, in the configured
// namespace: its pod, volume claim or NetworkPolicy (`paddock verify` looks).
func (k *Kubernetes) Leftovers(id backend.ID) []string {
	c, err := k.cluster(k.settings.Context)
	if err != nil {
		return []string{"the cluster could not be asked: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := k.settings.Namespace
	sel := &metav1.ListOptions{LabelSelector: LabelSandbox + "=" + string(id)}
	var left []string
	var pods corev1.PodList
	var claims corev1.PersistentVolumeClaimList
	var policies networkingv1.NetworkPolicyList
	for _, l := range []struct {
		rc       *rest.RESTClient
		resource string
		out      runtime.Object
		names    func() []string
	}{
		{c.api.core, "pods", &pods, func() (n []string) {
			for _, o := range pods.Items {
				n = append(n, o.Name)
			}
			return n
		}},
		{c.api.core, "persistentvolumeclaims", &claims, func() (n []string) {
			for _, o := range claims.Items {
				n = append(n, o.Name)
			}
			return n
		}},
		{c.api.networking, "networkpolicies", &policies, func() (n []string) {
			for _, o := range policies.Items {
				n = append(n, o.Name)
			}
			return n
		}},
	} {
		if err := list(ctx, l.rc, ns, l.resource, sel, l.out); err != nil {
			left = append(left, fmt.Sprintf("%s of sandbox %s: could not list: %v", l.resource, id, err))
			continue
		}
		for _, n := range l.names() {
			left = append(left, fmt.Sprintf("%s %s/%s", strings.TrimSuffix(l.resource, "s"), ns, n))
		}
	}
	return left
}
