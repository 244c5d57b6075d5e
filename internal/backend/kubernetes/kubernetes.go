// Package kubernetes runs sandboxes as pods of a Kubernetes cluster, through client-go:
// the kubeconfig's current context or one named, or the daemon's own service account
// when it runs in a pod. Each sandbox is a pod and a PersistentVolumeClaim holding its
// workspace, its home and the guest binary; stop deletes the pod and keeps the claim,
// start makes the pod again. The guest is copied in through the exec stream (checked
// by sha256) while an init container waits for it, and is the pod's long-lived process;
// Dial is an exec of `paddock guest connect` through the API server. A closed sandbox
// has a default-deny NetworkPolicy and, unless configured otherwise, no interface but
// loopback: an init container with CAP_NET_ADMIN alone takes the pod's interfaces down
// before the sandbox's own processes start without any capability. The daemon keeps
// one watch of paddock's pods and claims per namespace, and reads states from it.
package kubernetes

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/paddockhq/paddock/internal/backend"
)

// Name is the registry name.
const Name = "kubernetes"

// description is what the backend is: a pod's container, on a cluster that may be
// elsewhere, so never the default; it runs images loaded onto the cluster's nodes,
// placed by `up --context` and `--namespace`.
var description = backend.Description{Isolation: backend.IsolationContainer,
	Elsewhere: "its pods go to the cluster of your kubeconfig, which paddock's config does not name",
	Limits:    true, Images: backend.Images{Load: true}, Placement: []string{PlaceContext, PlaceNamespace}}

func init() {
	backend.Register(Name, description, func(env backend.Env) (backend.Backend, error) { return New(env) })
	// client-go reports through klog, on stderr, every exec stream paddock itself closes
	// ("use of closed network connection"): the errors that matter come back as errors.
	klog.SetLogger(logr.Discard())
}

// DefaultImage is the image `paddock image build` makes, loaded into the cluster with
// `paddock image load --backend kubernetes`.
const DefaultImage = "paddock/sandbox:latest"

// Labels paddock puts on what it makes, to find its own.
const (
	LabelManaged = "app.kubernetes.io/managed-by"
	LabelSandbox = "dev.paddock.sandbox"
	managedBy    = "paddock"
)

// Placement keys: where a sandbox goes, from `up --kube-context/--namespace`.
const (
	PlaceContext   = "kube-context"
	PlaceNamespace = "namespace"
)

// Kubernetes is the backend.
type Kubernetes struct {
	settings Settings
	dir      string
	log      *slog.Logger

	mu       sync.Mutex
	clusters map[string]*cluster    // by kubeconfig context ("" is the current one)
	records  map[backend.ID]*record // where each sandbox is
	avail    availability
	// kubeletPids is the nodes' podPidsLimit as their kubelets said it, once read (-1:
	// they did not say one, or differ); pids_limit in the config is taken over it.
	kubeletPids int64
	// wrap, when set, wraps the clients' transport (tests count requests with it).
	wrap func(http.RoundTripper) http.RoundTripper
}

var _ backend.Backend = (*Kubernetes)(nil)

// New constructs the backend from the config's [backends.kubernetes] options; nothing
// is asked of the cluster until it is used.
func New(env backend.Env) (*Kubernetes, error) {
	s, err := ParseSettings(env.Options)
	if err != nil {
		return nil, err
	}
	return &Kubernetes{settings: s, dir: env.Dir, log: slog.Default().With("backend", Name),
		clusters: map[string]*cluster{}, records: map[backend.ID]*record{}}, nil
}

// Name implements backend.Backend.
func (k *Kubernetes) Name() string { return Name }

// Describe implements backend.Backend: the same whatever the cluster.
func (k *Kubernetes) Describe() backend.Description { return description }

// record is where a sandbox is: kept in the backend's directory from its Create to its
// Destroy, so a daemon started later finds it.
type record struct {
	Context   string `json:"context,omitempty"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Pod is what the pod is made from; nil until Create has it.
	Pod *podSpec `json:"pod,omitempty"`
	// Running says the sandbox should run (started, not stopped): a pod missing then
	// was lost. Started says it ran once.
	Running bool `json:"running,omitempty"`
	Started bool `json:"started,omitempty"`
}

func (k *Kubernetes) recordPath(id backend.ID) string {
	return filepath.Join(k.dir, string(id)+".json")
}

// place decides and keeps where a new sandbox goes.
func (k *Kubernetes) place(spec backend.Spec) (*record, error) {
	rec := &record{Context: k.settings.Context, Namespace: k.settings.Namespace, Name: spec.Name}
	for key, v := range spec.Placement {
		switch key {
		case PlaceContext:
			if v != "" {
				rec.Context = v
			}
		case PlaceNamespace:
			if v != "" {
				if err := checkNamespace(v); err != nil {
					return nil, err
				}
				rec.Namespace = v
			}
		default:
			return nil, fmt.Errorf("the kubernetes backend takes no %q (it takes --kube-context and --namespace)", key)
		}
	}
	if k.dir != "" {
		if err := os.MkdirAll(filepath.Dir(k.recordPath(spec.ID)), 0o700); err != nil {
			return nil, err
		}
	}
	if err := k.save(spec.ID, rec); err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.records[spec.ID] = rec
	k.mu.Unlock()
	return rec, nil
}

// where returns where a sandbox is; ok is false when the backend has no record of it.
func (k *Kubernetes) where(id backend.ID) (*record, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if rec, ok := k.records[id]; ok {
		return rec, true
	}
	if k.dir == "" {
		return nil, false
	}
	data, err := os.ReadFile(k.recordPath(id))
	if err != nil {
		return nil, false
	}
	var rec record
	if json.Unmarshal(data, &rec) != nil || checkNamespace(rec.Namespace) != nil {
		return nil, false
	}
	k.records[id] = &rec
	return &rec, true
}

func (k *Kubernetes) forget(id backend.ID) {
	k.mu.Lock()
	delete(k.records, id)
	k.mu.Unlock()
	if k.dir != "" {
		os.Remove(k.recordPath(id))
	}
}

// cluster is one kubeconfig context's client and its watches.
type cluster struct {
	context string
	config  *rest.Config
	api     *kube

	mu      sync.Mutex
	watches map[string]*watch // by namespace
}

// cluster returns the client of a kubeconfig context, made once.
func (k *Kubernetes) cluster(kctx string) (*cluster, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c, ok := k.clusters[kctx]; ok {
		return c, nil
	}
	cfg, err := k.restConfig(kctx)
	if err != nil {
		return nil, err
	}
	// Fifty sandboxes made at once are some 300 requests: client-go's default of 5 per
	// second would make that a minute of waiting on the client alone.
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "paddock"
	if k.wrap != nil {
		cfg.WrapTransport = k.wrap
	}
	api, err := newKube(cfg)
	if err != nil {
		return nil, err
	}
	c := &cluster{context: kctx, config: cfg, api: api, watches: map[string]*watch{}}
	k.clusters[kctx] = c
	return c, nil
}

// errNoKubeconfig says no kubeconfig was found and the daemon is not in a pod.
var errNoKubeconfig = errors.New("no kubeconfig")

// restConfig loads the kubeconfig (the configured file, else $KUBECONFIG, else
// ~/.kube/config) at a context, or the in-cluster config when there is no kubeconfig
// and the daemon runs in a pod.
func (k *Kubernetes) restConfig(kctx string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.settings.Kubeconfig != "" {
		rules.ExplicitPath = k.settings.Kubeconfig
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kctx})
	if k.settings.Kubeconfig != "" {
		if _, err := os.Stat(k.settings.Kubeconfig); err != nil {
			return nil, fmt.Errorf("no kubeconfig at %s: %w", k.settings.Kubeconfig, errNoKubeconfig)
		}
	}
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("read the kubeconfig: %w", err)
	}
	if len(raw.Contexts) == 0 && kctx == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
		return nil, errNoKubeconfig
	}
	if kctx != "" {
		if _, ok := raw.Contexts[kctx]; !ok {
			return nil, fmt.Errorf("the kubeconfig has no context %q (it has: %s)", kctx, strings.Join(contextNames(raw.Contexts), ", "))
		}
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("read the kubeconfig: %w", err)
	}
	return cfg, nil
}

func contextNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}

// kubeconfigHint says where the kubeconfig is looked for.
func (k *Kubernetes) kubeconfigHint() string {
	if k.settings.Kubeconfig != "" {
		return k.settings.Kubeconfig
	}
	if v := os.Getenv("KUBECONFIG"); v != "" {
		return "$KUBECONFIG (" + v + ")"
	}
	return clientcmd.RecommendedHomeFile
}

// Names of what a sandbox is made of.
func podName(id backend.ID) string    { return "paddock-" + string(id) }
func claimName(id backend.ID) string  { return "paddock-" + string(id) }
func policyName(id backend.ID) string { return "paddock-" + string(id) }

var _ backend.Closer = (*Kubernetes)(nil)

// Close implements backend.Closer: it ends the watches.
func (k *Kubernetes) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.clusters {
		c.mu.Lock()
		for ns, w := range c.watches {
			close(w.stop)
			delete(c.watches, ns)
		}
		c.mu.Unlock()
	}
}

// Namespace is where sandboxes go unless `up --namespace` says otherwise.
func (k *Kubernetes) Namespace() string { return k.settings.Namespace }

// Dir is the backend's own directory: the sandboxes' records.
func (k *Kubernetes) Dir() string { return k.dir }
