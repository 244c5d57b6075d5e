package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddockhq/paddock/internal/backend"
)

var (
	_ backend.Reporter    = (*Kubernetes)(nil)
	_ backend.LimitReader = (*Kubernetes)(nil)
	_ backend.ImageLoader = (*Kubernetes)(nil)
)

// Permission is one verb on one resource that paddock needs in a sandbox's namespace.
type Permission struct {
	Group, Resource, Verb string
}

func (p Permission) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	return p.Verb + " " + r
}

// Permissions are everything paddock asks of the API server in a namespace; the Role in
// docs/kubernetes-rbac.yaml grants exactly these.
var Permissions = []Permission{
	{"", "pods", "get"}, {"", "pods", "list"}, {"", "pods", "watch"}, {"", "pods", "create"}, {"", "pods", "delete"},
	// Exec over WebSocket is authorized as create since 1.31, as get before.
	{"", "pods/exec", "create"}, {"", "pods/exec", "get"},
	{"", "persistentvolumeclaims", "get"}, {"", "persistentvolumeclaims", "list"}, {"", "persistentvolumeclaims", "watch"},
	{"", "persistentvolumeclaims", "create"}, {"", "persistentvolumeclaims", "delete"},
	{"networking.k8s.io", "networkpolicies", "create"}, {"networking.k8s.io", "networkpolicies", "delete"},
	{"", "events", "list"},
}

// availability is Available's answer for a while: it costs a dozen requests.
type availability struct {
	at  time.Time
	err error
}

// Available implements backend.Backend: a kubeconfig (or the pod's service account), an
// API server that answers, every permission paddock needs in the namespace, and a
// storage class for the claims. A success is trusted for a minute.
func (k *Kubernetes) Available(ctx context.Context) error {
	k.mu.Lock()
	a := k.avail
	k.mu.Unlock()
	if !a.at.IsZero() && a.err == nil && time.Since(a.at) < time.Minute {
		return nil
	}
	err := k.available(ctx)
	k.mu.Lock()
	k.avail = availability{at: time.Now(), err: err}
	k.mu.Unlock()
	return err
}

func (k *Kubernetes) available(ctx context.Context) error {
	unavailable := func(reason, fix string) error {
		return &backend.UnavailableError{Backend: Name, Reason: reason, Fix: fix}
	}
	c, err := k.cluster(k.settings.Context)
	if errors.Is(err, errNoKubeconfig) && k.settings.Kubeconfig != "" {
		return unavailable(err.Error(), "point kubeconfig in [backends.kubernetes] of the config at one, or leave it out for $KUBECONFIG and ~/.kube/config")
	}
	if errors.Is(err, errNoKubeconfig) {
		return unavailable("no kubeconfig: none at "+k.kubeconfigHint()+", and the daemon does not run in a pod",
			"point kubeconfig in [backends.kubernetes] of the config at one, or set KUBECONFIG for the daemon")
	}
	if err != nil {
		return unavailable(err.Error(), "check the kubeconfig (kubectl config view), or the context in [backends.kubernetes]")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.api.core.Get().AbsPath("/version").DoRaw(ctx); err != nil {
		return unavailable(fmt.Sprintf("the API server at %s does not answer: %v", c.config.Host, err),
			"check that the cluster is up and the kubeconfig's context is the one meant: kubectl cluster-info")
	}
	ns := k.settings.Namespace
	if missing, err := c.missingPermissions(ctx, ns); err != nil {
		return unavailable("cannot ask the API server what paddock may do: "+err.Error(), "check the kubeconfig's user")
	} else if len(missing) > 0 {
		names := make([]string, len(missing))
		for i, p := range missing {
			names[i] = p.String()
		}
		return unavailable(fmt.Sprintf("the kubeconfig's user may not %s in namespace %s", strings.Join(names, ", "), ns),
			fmt.Sprintf("grant paddock's Role: kubectl apply -n %s -f docs/kubernetes-rbac.yaml (and bind it to the user, as that file shows)", ns))
	}
	if msg := c.storageProblem(ctx, k.settings.StorageClass); msg != "" {
		return unavailable(msg, "set storage_class in [backends.kubernetes] to a class the cluster has (kubectl get storageclass), or make one the default")
	}
	return nil
}

// missingPermissions asks the API server, for each permission paddock needs, whether the
// client has it in the namespace.
func (c *cluster) missingPermissions(ctx context.Context, ns string) ([]Permission, error) {
	type answer struct {
		p   Permission
		ok  bool
		err error
	}
	answers := make(chan answer, len(Permissions))
	for _, p := range Permissions {
		go func() {
			var review authorizationv1.SelfSubjectAccessReview
			err := create(ctx, c.api.authorization, "", "selfsubjectaccessreviews", &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Group: p.Group, Resource: strings.Split(p.Resource, "/")[0], Subresource: subresource(p.Resource), Verb: p.Verb}},
			}, &review)
			answers <- answer{p: p, ok: err == nil && review.Status.Allowed, err: err}
		}()
	}
	var missing []Permission
	for range Permissions {
		a := <-answers
		if a.err != nil {
			return nil, a.err
		}
		if !a.ok {
			missing = append(missing, a.p)
		}
	}
	// In the order of Permissions, as the docs list them.
	var ordered []Permission
	for _, p := range Permissions {
		for _, m := range missing {
			if m == p {
				ordered = append(ordered, p)
			}
		}
	}
	return ordered, nil
}

func subresource(r string) string {
	_, sub, _ := strings.Cut(r, "/")
	return sub
}

// storageProblem says what keeps claims from being made with the class (the default
// when empty), or "" when nothing does or the client may not read storage classes.
func (c *cluster) storageProblem(ctx context.Context, class string) string {
	var classes storagev1.StorageClassList
	err := list(ctx, c.api.storage, "", "storageclasses", &metav1.ListOptions{}, &classes)
	if apierrors.IsForbidden(err) || err != nil {
		return ""
	}
	var names []string
	for _, sc := range classes.Items {
		names = append(names, sc.Name)
		if class == "" && (sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" ||
			sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true") {
			return ""
		}
		if sc.Name == class {
			return ""
		}
	}
	has := "it has none"
	if len(names) > 0 {
		has = "it has: " + strings.Join(names, ", ")
	}
	if class == "" {
		return "the cluster has no default storage class for the sandboxes' volume claims (" + has + ")"
	}
	return fmt.Sprintf("the cluster has no storage class %q (%s)", class, has)
}

// Report implements backend.Reporter: how the network is closed, and the limits.
func (k *Kubernetes) Report(ctx context.Context) []backend.Finding {
	var out []backend.Finding
	switch k.settings.NetworkIsolation {
	case "netns":
		out = append(out, backend.Finding{Topic: "network", OK: true,
			Text: "a closed sandbox's pod has a default-deny NetworkPolicy, and its interfaces are taken down before its processes start (an init container with CAP_NET_ADMIN alone): loopback only, whatever the network plugin"})
	case "policy":
		out = append(out, backend.Finding{Topic: "network", OK: true,
			Text: "a closed sandbox's pod has a default-deny NetworkPolicy alone: it holds only where the cluster's network plugin enforces NetworkPolicy (Calico, Cilium...)",
			Fix:  "with a plugin that does not (bridge, flannel), set network_isolation = \"netns\""})
	}
	pids := k.podPidsLimit(ctx)
	limits := backend.Finding{Topic: "limits", OK: pids > 0,
		Text: fmt.Sprintf("each pod gets %s unless `up --cpus/--memory` say otherwise; processes: the kubelet's podPidsLimit%s",
			backend.LimitsFor(backend.Spec{}), orUnknown(pids))}
	if !limits.OK {
		limits.Fix = "set a podPidsLimit on the nodes' kubelets (it is unlimited by default), or pids_limit in [backends.kubernetes] to theirs where they do not say it"
	}
	out = append(out, limits)
	if k.settings.RuntimeClass != "" {
		out = append(out, backend.Finding{Topic: "runtime", OK: true, Text: "pods run under RuntimeClass " + k.settings.RuntimeClass})
	}
	return out
}

// Limits implements backend.LimitReader: the pod's limits as the API server holds them,
// and the nodes' process limit as configured.
func (k *Kubernetes) Limits(ctx context.Context, id backend.ID) (backend.Limits, error) {
	rec, c, err := k.locate(id)
	if err != nil {
		return backend.Limits{}, err
	}
	w, err := c.watch(ctx, rec.Namespace)
	if err != nil {
		return backend.Limits{}, err
	}
	p := w.pod(podName(id))
	if p == nil || !containerRunning(p, sandboxContainer) {
		return backend.Limits{}, fmt.Errorf("limits of sandbox %s: %w", id, backend.ErrNotRunning)
	}
	var res corev1.ResourceList
	for _, ctr := range p.Spec.Containers {
		if ctr.Name == sandboxContainer {
			res = ctr.Resources.Limits
		}
	}
	l := backend.Limits{CPUs: float64(res.Cpu().MilliValue()) / 1000, MemoryBytes: res.Memory().Value(), Pids: k.podPidsLimit(ctx)}
	if l.Pids == 0 {
		return l, &backend.LimitsNotEnforcedError{Reason: "the nodes' process limit (the kubelet's podPidsLimit) is not known",
			Fix: "set pids_limit in [backends.kubernetes] to it"}
	}
	return l, nil
}
