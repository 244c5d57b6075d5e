package kubernetes

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/inside"
)

// What the pod is made of.
const (
	sandboxContainer = "sandbox"
	prepareContainer = "prepare"
	dataVolume       = "data"
	dataMount        = "/paddock-data"      // the whole claim, in the prepare container
	guestDir         = dataMount + "/guest" // the guest binary's directory on the claim
	goFile           = "/run/.paddock-go"   // the prepare container waits for it
	guestSocket      = inside.GuestSocket
	annotationName   = "dev.paddock.name"
	agentUID         = int64(1000)
)

// labelsOf are the labels of everything paddock makes for a sandbox.
func labelsOf(id backend.ID) map[string]string {
	return map[string]string{LabelManaged: managedBy, LabelSandbox: string(id)}
}

// claimFor is the sandbox's volume claim: its workspace, its home and the guest binary,
// kept while the sandbox is stopped.
func (k *Kubernetes) claimFor(id backend.ID, rec *record) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimName(id), Namespace: rec.Namespace, Labels: labelsOf(id),
			Annotations: map[string]string{annotationName: rec.Name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(k.settings.StorageSize)}},
		},
	}
	if k.settings.StorageClass != "" {
		pvc.Spec.StorageClassName = ptr.To(k.settings.StorageClass)
	}
	return pvc
}

// policyFor is the closed sandbox's NetworkPolicy: every ingress and egress of its pod
// denied. Clusters whose network plugin enforces policies enforce it; the pod's own
// isolation (network_isolation = "netns") holds on the others.
func policyFor(id backend.ID, rec *record) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName(id), Namespace: rec.Namespace, Labels: labelsOf(id)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelSandbox: string(id)}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// prepareScript runs in the prepare container, with the whole claim at dataMount: it
// makes the claim's directories (the agent's), gives a new home the image's files, waits
// for the backend to put the guest binary in place (through exec) and say go, and then,
// for a closed sandbox, has the guest take the pod's interfaces away. It runs as the
// agent's user, or, when it must isolate the network, as root with CAP_CHOWN and
// CAP_NET_ADMIN alone: one container, not two, as each costs the kubelet a second.
const prepareScript = `set -e
d=` + dataMount + `
mkdir -p "$d/workspace" "$d/home" "$d/guest"
# The claim's root is setgid (fsGroup): directories made under these would inherit it.
# (Once they are the agent's, root without CAP_FOWNER may not: they are done by then.)
chmod g-s "$d/workspace" "$d/home" "$d/guest" 2>/dev/null || true
if [ ! -e "$d/guest/.home-seeded" ]; then
	cp -a ` + inside.Home + `/. "$d/home/" 2>/dev/null || true
	touch "$d/guest/.home-seeded"
fi
if [ "$(id -u)" = 0 ]; then chown 1000:1000 "$d/workspace" "$d/home"; fi
echo "waiting for the guest binary"
while [ ! -e ` + goFile + ` ]; do sleep 0.1 2>/dev/null || sleep 1; done
if [ -n "$PADDOCK_ISOLATE" ]; then exec "$d/guest/paddock" ` + inside.GuestCommand + ` isolate-network; fi
`

// installScript, run by exec in the prepare container with the binary on stdin and its
// sha256 as $1, puts the guest in place if what arrived has that sha256, and says go.
const installScript = `set -e
f=` + guestDir + `/paddock
cat > "$f.new"
chmod 555 "$f.new"
got=$(sha256sum "$f.new" | cut -d' ' -f1)
if [ "$got" != "$1" ]; then echo "the copy has sha256 $got, want $1" >&2; rm -f "$f.new"; exit 3; fi
mv -f "$f.new" "$f"
touch ` + goFile + `
`

// reuseScript says go if the claim already has the guest binary of sha256 $1 (a sandbox
// started again); it fails, and the binary is copied, otherwise.
const reuseScript = `f=` + guestDir + `/paddock
[ -f "$f" ] && [ "$(sha256sum "$f" | cut -d' ' -f1)" = "$1" ] && touch ` + goFile

// podSpec is what the pod is made from, kept in the sandbox's record so that start
// makes the same pod again.
type podSpec struct {
	Image       string   `json:"image"`
	Env         []string `json:"env"`
	OpenNetwork bool     `json:"open_network,omitempty"`
	CPUs        float64  `json:"cpus"`
	MemoryBytes int64    `json:"memory_bytes"`
	// The guest's binary and sha256 keep their JSON names from before the guest was
	// called the guest: the records of existing sandboxes carry them.
	GuestSHA256 string `json:"agent_sha256"`
	GuestBinary string `json:"agent_binary"`
}

// pullPolicy is the pods' imagePullPolicy: the configured one, else Never for an image
// with no registry in its name (loaded into the nodes by `paddock image load`), else
// IfNotPresent.
func (k *Kubernetes) pullPolicy(image string) corev1.PullPolicy {
	if p := k.settings.ImagePullPolicy; p != "" {
		return corev1.PullPolicy(p)
	}
	if hasRegistry(image) {
		return corev1.PullIfNotPresent
	}
	return corev1.PullNever
}

// hasRegistry says whether an image reference names its registry: a first component
// with a dot or a port, or localhost.
func hasRegistry(image string) bool {
	first, _, ok := strings.Cut(image, "/")
	return ok && (strings.ContainsAny(first, ".:") || first == "localhost")
}

// hostnameOf makes a sandbox's name a hostname (a DNS label).
func hostnameOf(name string) string {
	h := strings.Trim(nonLabel.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(h) > 63 {
		h = strings.Trim(h[:63], "-")
	}
	if h == "" {
		return "sandbox"
	}
	return h
}

var nonLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// podFor is the sandbox's pod.
func (k *Kubernetes) podFor(id backend.ID, rec *record, ps podSpec) *corev1.Pod {
	limits := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(ps.CPUs*1000), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(ps.MemoryBytes, resource.BinarySI),
		corev1.ResourceEphemeralStorage: resource.MustParse(k.settings.EphemeralStorage),
	}
	requests := corev1.ResourceList{
		corev1.ResourceCPU:    minQuantity(resource.MustParse(k.settings.RequestCPU), limits[corev1.ResourceCPU]),
		corev1.ResourceMemory: minQuantity(resource.MustParse(k.settings.RequestMemory), limits[corev1.ResourceMemory]),
		// Without a request of its own, the limit would be the request: a node's disk
		// would then hold a handful of sandboxes.
		corev1.ResourceEphemeralStorage: minQuantity(resource.MustParse("256Mi"), limits[corev1.ResourceEphemeralStorage]),
	}
	resources := corev1.ResourceRequirements{Limits: limits, Requests: requests}
	env := make([]corev1.EnvVar, 0, len(ps.Env))
	for _, kv := range ps.Env {
		name, value, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: name, Value: value})
	}
	restricted := func(readOnlyRoot bool) *corev1.SecurityContext {
		return &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			ReadOnlyRootFilesystem:   ptr.To(readOnlyRoot),
		}
	}
	runMount := corev1.VolumeMount{Name: "run", MountPath: "/run"}
	pullPolicy := k.pullPolicy(ps.Image)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(id), Namespace: rec.Namespace, Labels: labelsOf(id),
			Annotations: map[string]string{annotationName: rec.Name}},
		Spec: corev1.PodSpec{
			Hostname:                      hostnameOf(rec.Name),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To(int64(2)),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(agentUID), RunAsGroup: ptr.To(agentUID),
				FSGroup: ptr.To(agentUID), FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			InitContainers: []corev1.Container{{
				Name: prepareContainer, Image: ps.Image, ImagePullPolicy: pullPolicy,
				Command:         []string{"sh", "-c", prepareScript},
				SecurityContext: restricted(true), Resources: resources,
				VolumeMounts: []corev1.VolumeMount{{Name: dataVolume, MountPath: dataMount}, runMount},
			}},
			Containers: []corev1.Container{{
				Name: sandboxContainer, Image: ps.Image, ImagePullPolicy: pullPolicy,
				// Process 1 is the guest's ns-init: not dumpable, so no process inside can
				// trace or stop it, and it reaps the orphans the agent's processes leave.
				Command: append(unsetServiceEnv(), inside.GuestBinary, inside.GuestCommand, "ns-init", "--",
					inside.GuestBinary, inside.GuestCommand, "serve", "--socket", guestSocket, "--sandbox", rec.Name),
				WorkingDir: inside.Workspace, Env: env,
				SecurityContext: restricted(k.settings.ReadOnlyRoot), Resources: resources,
				VolumeMounts: []corev1.VolumeMount{
					{Name: dataVolume, SubPath: "workspace", MountPath: inside.Workspace},
					{Name: dataVolume, SubPath: "home", MountPath: inside.Home},
					{Name: dataVolume, SubPath: "guest", MountPath: "/opt/paddock/bin", ReadOnly: true}, runMount,
					{Name: "tmp", MountPath: "/tmp"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: dataVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(id)}}},
				// /tmp holds half the sandbox's memory, /run 64 MiB, as on the other backends.
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(ps.MemoryBytes/2, resource.BinarySI)}}},
				{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(64<<20, resource.BinarySI)}}},
			},
		},
	}
	if k.settings.RuntimeClass != "" {
		pod.Spec.RuntimeClassName = ptr.To(k.settings.RuntimeClass)
	}
	if !ps.OpenNetwork && k.settings.NetworkIsolation == "netns" {
		// The one step with capabilities: root with CAP_NET_ADMIN and CAP_CHOWN alone,
		// before the sandbox's processes start; the guest it runs to take the interfaces
		// away is the one checked by sha256 (the sandbox mounts it read-only). The
		// sandbox's processes, with no capability, cannot bring an interface back.
		prep := &pod.Spec.InitContainers[0]
		prep.SecurityContext.Capabilities.Add = []corev1.Capability{"CHOWN", "NET_ADMIN"}
		prep.SecurityContext.RunAsUser, prep.SecurityContext.RunAsGroup = ptr.To(int64(0)), ptr.To(int64(0))
		prep.SecurityContext.RunAsNonRoot = ptr.To(false)
		prep.Env = []corev1.EnvVar{{Name: "PADDOCK_ISOLATE", Value: "1"}}
	}
	return pod
}

// unsetServiceEnv is an env(1) command line that removes what the kubelet puts in every
// container's environment whatever the pod says (the API server's address): nothing in
// a sandbox is to be pointed at the cluster.
func unsetServiceEnv() []string {
	argv := []string{"env"}
	for _, name := range []string{"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_SERVICE_PORT_HTTPS",
		"KUBERNETES_PORT", "KUBERNETES_PORT_443_TCP", "KUBERNETES_PORT_443_TCP_PROTO", "KUBERNETES_PORT_443_TCP_PORT", "KUBERNETES_PORT_443_TCP_ADDR"} {
		argv = append(argv, "-u", name)
	}
	return argv
}

func minQuantity(a, b resource.Quantity) resource.Quantity {
	if a.Cmp(b) > 0 {
		return b
	}
	return a
}

// describe names an object for messages.
func describe(kind, ns, name string) string { return fmt.Sprintf("%s %s/%s", kind, ns, name) }
