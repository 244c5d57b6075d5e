package kubernetes

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/paddockhq/paddock/internal/backend"
)

// Settings are the config's [backends.kubernetes] table.
type Settings struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, then ~/.kube/config,
	// then the pod's own service account when the daemon runs in a cluster.
	Kubeconfig string `toml:"kubeconfig"`
	// Context is the kubeconfig context sandboxes go to; empty means its current one.
	Context string `toml:"context"`
	// Namespace is where sandboxes go unless `up --namespace` says otherwise.
	Namespace string `toml:"namespace"`
	// StorageClass is the class of each sandbox's volume claim; empty means the cluster's
	// default class.
	StorageClass string `toml:"storage_class"`
	// StorageSize is what each sandbox's claim asks for (its workspace and home).
	StorageSize string `toml:"storage_size"`
	// RuntimeClass, when set, is the RuntimeClass of every sandbox pod (gVisor's where
	// the cluster has one).
	RuntimeClass string `toml:"runtime_class"`
	// Image is the sandbox image; `up --image` overrides it per sandbox.
	Image string `toml:"image"`
	// ImagePullPolicy is the pods' imagePullPolicy; empty chooses from the image: Never
	// for a name with no registry (loaded with `paddock image load`), IfNotPresent else.
	ImagePullPolicy string `toml:"image_pull_policy"`
	// RequestCPU and RequestMemory are what each pod asks the scheduler for; the limits
	// are the sandbox's (`up --cpus/--memory`, the same defaults as on docker).
	RequestCPU    string `toml:"request_cpu"`
	RequestMemory string `toml:"request_memory"`
	// EphemeralStorage limits a pod's writes outside its volume (its /tmp is memory).
	EphemeralStorage string `toml:"ephemeral_storage"`
	// PidsLimit is the nodes' kubelet podPidsLimit: Kubernetes limits every pod of a node
	// alike and cannot limit one. Zero means not known (doctor says so).
	PidsLimit int64 `toml:"pids_limit"`
	// NetworkIsolation is "netns" (the default: a default-deny NetworkPolicy, and the
	// pod's interfaces taken down before the sandbox's processes start, so a closed
	// sandbox has loopback alone whatever the CNI) or "policy" (the NetworkPolicy alone,
	// for clusters whose CNI enforces it and whose admission refuses CAP_NET_ADMIN).
	NetworkIsolation string `toml:"network_isolation"`
	// ReadOnlyRoot makes the image's filesystem read-only in the pod (workspace, home,
	// /tmp and /run stay writable); off for images that write elsewhere.
	ReadOnlyRoot bool `toml:"read_only_root"`
	// ContainerdSocket and ContainerdNamespace are the node's containerd, which `paddock
	// image load --backend kubernetes` imports images into (a single-node cluster).
	ContainerdSocket    string `toml:"containerd_socket"`
	ContainerdNamespace string `toml:"containerd_namespace"`
	// StartTimeout is how long, in seconds, a pod may take to run before start gives up.
	StartTimeout int `toml:"start_timeout"`
}

// DefaultSettings are the settings with nothing configured.
func DefaultSettings() Settings {
	return Settings{Namespace: "paddock", StorageSize: "10Gi", Image: DefaultImage,
		RequestCPU: "25m", RequestMemory: "128Mi", EphemeralStorage: "10Gi", NetworkIsolation: "netns",
		ReadOnlyRoot: true, ContainerdSocket: "/run/containerd/containerd.sock", ContainerdNamespace: "k8s.io",
		StartTimeout: 300}
}

// ParseSettings reads the options of the config's [backends.kubernetes] table over the
// defaults, refusing unknown keys and values that cannot work.
func ParseSettings(opts map[string]any) (Settings, error) {
	s := DefaultSettings()
	if err := backend.DecodeOptions("kubernetes", opts, &s); err != nil {
		return s, err
	}
	return s, s.validate()
}

func (s Settings) validate() error {
	if err := checkNamespace(s.Namespace); err != nil {
		return fmt.Errorf("kubernetes: namespace: %w", err)
	}
	for _, q := range []struct{ key, value string }{{"storage_size", s.StorageSize}, {"request_cpu", s.RequestCPU},
		{"request_memory", s.RequestMemory}, {"ephemeral_storage", s.EphemeralStorage}} {
		if _, err := resource.ParseQuantity(q.value); err != nil {
			return fmt.Errorf("kubernetes: %s = %q is not a quantity (like 10Gi, 250m)", q.key, q.value)
		}
	}
	switch s.ImagePullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		return fmt.Errorf("kubernetes: image_pull_policy is Always, IfNotPresent or Never, not %q", s.ImagePullPolicy)
	}
	switch s.NetworkIsolation {
	case "netns", "policy":
	default:
		return fmt.Errorf("kubernetes: network_isolation is netns or policy, not %q", s.NetworkIsolation)
	}
	if s.PidsLimit < 0 || s.StartTimeout <= 0 {
		return errors.New("kubernetes: pids_limit and start_timeout must be positive")
	}
	return nil
}

// checkNamespace refuses what cannot name a namespace.
func checkNamespace(ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("%q is not a namespace name: %s", ns, errs[0])
	}
	return nil
}
