package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestproto"
)

// locate returns where a sandbox is and its cluster's client.
func (k *Kubernetes) locate(id backend.ID) (*record, *cluster, error) {
	rec, ok := k.where(id)
	if !ok {
		return nil, nil, fmt.Errorf("sandbox %s: %w", id, backend.ErrNotFound)
	}
	c, err := k.cluster(rec.Context)
	if err != nil {
		return nil, nil, err
	}
	return rec, c, nil
}

// Create implements backend.Backend: it keeps where the sandbox goes and what its pod is
// made of, and makes its claim and, for a closed sandbox, its NetworkPolicy. The pod is
// made by Start.
func (k *Kubernetes) Create(ctx context.Context, spec backend.Spec) error {
	if rec, ok := k.where(spec.ID); ok && rec.Pod != nil {
		return nil
	}
	limits := backend.LimitsFor(spec)
	if spec.PidsLimit != 0 {
		if nodes := k.podPidsLimit(ctx); spec.PidsLimit != nodes {
			return fmt.Errorf("the kubernetes backend cannot limit one sandbox's processes: the kubelet limits every pod of a node alike (podPidsLimit%s); leave out --pids",
				orUnknown(nodes))
		}
	}
	// The copy in the pod is checked against it: a binary that is not what the daemon
	// hashed fails there.
	sum := spec.GuestSHA256
	if sum == "" {
		return errors.New("the guest binary's sha256 is not known")
	}
	image := k.settings.Image
	if spec.Image != "" {
		image = spec.Image
	}
	rec, err := k.place(spec)
	if err != nil {
		return err
	}
	c, err := k.cluster(rec.Context)
	if err != nil {
		return err
	}
	rec.Pod = &podSpec{Image: image, Env: append(backend.BaseEnv(spec), spec.Env...), OpenNetwork: spec.OpenNetwork,
		CPUs: limits.CPUs, MemoryBytes: limits.MemoryBytes, GuestSHA256: sum, GuestBinary: spec.GuestBinary}
	if err := k.save(spec.ID, rec); err != nil {
		return err
	}
	if err := c.ensureNamespace(ctx, rec.Namespace); err != nil {
		return err
	}
	if err := create(ctx, c.api.core, rec.Namespace, "persistentvolumeclaims", k.claimFor(spec.ID, rec), &corev1.PersistentVolumeClaim{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the sandbox's volume claim: %w", err)
	}
	if !spec.OpenNetwork {
		if err := create(ctx, c.api.networking, rec.Namespace, "networkpolicies", policyFor(spec.ID, rec), &networkingv1.NetworkPolicy{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create the sandbox's NetworkPolicy: %w", err)
		}
	}
	return nil
}

func orUnknown(pids int64) string {
	if pids == 0 {
		return ", not known here: set pids_limit in [backends.kubernetes]"
	}
	return fmt.Sprintf(" = %d", pids)
}

// ensureNamespace makes the namespace if it does not exist.
func (c *cluster) ensureNamespace(ctx context.Context, ns string) error {
	err := get(ctx, c.api.core, "", "namespaces", ns, &corev1.Namespace{})
	if err == nil || apierrors.IsForbidden(err) {
		return nil // may exist; making the claim says if not
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	err = create(ctx, c.api.core, "", "namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{LabelManaged: managedBy}}}, &corev1.Namespace{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s does not exist and cannot be made (%v): make it with `kubectl create namespace %s`", ns, err, ns)
	}
	return nil
}

// Start implements backend.Backend: it makes the sandbox's pod (again, after a stop or a
// lost pod), copies the guest in while the prepare container waits, and returns once the
// guest answers.
func (k *Kubernetes) Start(ctx context.Context, id backend.ID) error {
	rec, c, err := k.locate(id)
	if err != nil {
		return err
	}
	if rec.Pod == nil {
		return fmt.Errorf("sandbox %s: %w (it was never made whole: remove it and make it again)", id, backend.ErrNotFound)
	}
	w, err := c.watch(ctx, rec.Namespace)
	if err != nil {
		return err
	}
	if w.claim(claimName(id)) == nil {
		// The watch may not have a claim just made yet: the API server says.
		if err := get(ctx, c.api.core, rec.Namespace, "persistentvolumeclaims", claimName(id), &corev1.PersistentVolumeClaim{}); apierrors.IsNotFound(err) {
			return fmt.Errorf("sandbox %s: %w (its volume claim %s/%s was removed: remove the sandbox and make it again)", id, backend.ErrNotFound, rec.Namespace, claimName(id))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(k.settings.StartTimeout)*time.Second)
	defer cancel()
	if p := w.pod(podName(id)); p != nil && (p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
		// An evicted or ended pod is made again from the claim; one being deleted is
		// waited out first.
		if err := k.deletePod(ctx, c, w, rec.Namespace, id, 0); err != nil {
			return err
		}
	}
	fresh := false
	if w.pod(podName(id)) == nil {
		if err := create(ctx, c.api.core, rec.Namespace, "pods", k.podFor(id, rec, *rec.Pod), &corev1.Pod{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create the sandbox's pod: %w", err)
		}
		fresh = true
	}
	hasGuest := rec.Started // a claim never started has no guest binary yet
	rec.Running = true
	if err := k.save(id, rec); err != nil {
		return err
	}
	if fresh || !containerRunning(w.pod(podName(id)), sandboxContainer) {
		if err := k.waitFor(ctx, c, w, rec.Namespace, id, prepareContainer); err != nil {
			return err
		}
		if err := k.install(ctx, c, rec, id, hasGuest); err != nil {
			return err
		}
	}
	if err := k.waitFor(ctx, c, w, rec.Namespace, id, sandboxContainer); err != nil {
		return err
	}
	for {
		err := k.probe(ctx, c, rec.Namespace, podName(id))
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the guest in %s did not answer: %w", describe("pod", rec.Namespace, podName(id)), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// install puts the guest binary on the claim, through the prepare container's exec,
// unless the claim has it already (a sandbox started again), and says go.
func (k *Kubernetes) install(ctx context.Context, c *cluster, rec *record, id backend.ID, hasGuest bool) error {
	pod := podName(id)
	// The prepare container may have finished already (a pod whose sandbox container
	// restarted): nothing to do then.
	var p corev1.Pod
	if err := get(ctx, c.api.core, rec.Namespace, "pods", pod, &p); err == nil && !initRunning(&p, prepareContainer) {
		return nil
	}
	sum := rec.Pod.GuestSHA256
	// Saying go lets the prepare container end, which may cut the exec that said it: an
	// exec that fails is judged by how the container ended.
	if !hasGuest {
		// Straight to the copy.
	} else if code, _, err := c.run(ctx, rec.Namespace, pod, prepareContainer, []string{"sh", "-c", reuseScript, "sh", sum}, nil); err == nil && code == 0 {
		return nil
	} else if err != nil {
		if ok, err := k.prepared(ctx, c, rec.Namespace, pod); ok || err != nil {
			return err
		}
	}
	bin, err := os.Open(rec.Pod.GuestBinary)
	if err != nil {
		return fmt.Errorf("read the guest binary: %w", err)
	}
	defer bin.Close()
	code, out, err := c.run(ctx, rec.Namespace, pod, prepareContainer, []string{"sh", "-c", installScript, "sh", sum}, bin)
	if err != nil {
		if ok, err := k.prepared(ctx, c, rec.Namespace, pod); ok || err != nil {
			return err
		}
	}
	if err != nil {
		return fmt.Errorf("copy the guest into %s: %w", describe("pod", rec.Namespace, pod), err)
	}
	if code != 0 {
		return fmt.Errorf("copy the guest into %s: exit %d: %s (the image needs sh, cat, sha256sum and cut)", describe("pod", rec.Namespace, pod), code, strings.TrimSpace(out))
	}
	return nil
}

// probe runs the guest handshake once.
func (k *Kubernetes) probe(ctx context.Context, c *cluster, ns, pod string) error {
	conn, err := c.dial(ctx, ns, pod)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = guestproto.ClientHandshake(conn, "probe")
	return err
}

// containerRunning says whether the named container of a pod runs.
func containerRunning(p *corev1.Pod, name string) bool {
	if p == nil {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s.State.Running != nil
		}
	}
	return false
}

func initRunning(p *corev1.Pod, name string) bool {
	for _, s := range p.Status.InitContainerStatuses {
		if s.Name == name {
			return s.State.Running != nil
		}
	}
	return false
}

// waitFor waits until the named container (init or not) of the sandbox's pod runs, and
// fails as soon as the pod cannot get there: an image that cannot be had, a container
// that cannot be made, a pod that failed, or a claim that cannot be bound. Each failure
// says why, from the pod's status and events.
func (k *Kubernetes) waitFor(ctx context.Context, c *cluster, w *watch, ns string, id backend.ID, container string) error {
	var last string
	seen := false // the watch may not have the pod just made yet
	err := w.until(ctx, func() (bool, error) {
		p := w.pod(podName(id))
		if p == nil && seen {
			return false, fmt.Errorf("%s was deleted while starting", describe("pod", ns, podName(id)))
		}
		if p == nil {
			return false, nil
		}
		seen = true
		statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
		for _, s := range statuses {
			if s.Name == container && s.State.Running != nil {
				return true, nil
			}
			if s.Name == container && container == prepareContainer && s.State.Terminated != nil && s.State.Terminated.ExitCode == 0 {
				return true, nil // done already (the pod of an earlier start): install sees so
			}
			if s.State.Waiting != nil && fatalWaiting[s.State.Waiting.Reason] {
				return false, k.podError(ctx, c, p, fmt.Sprintf("container %s: %s: %s", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message))
			}
			if t := s.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 && s.RestartCount > 2 {
				return false, k.podError(ctx, c, p, fmt.Sprintf("container %s keeps failing (exit %d, %s)", s.Name, t.ExitCode, t.Reason))
			}
		}
		if p.Status.Phase == corev1.PodFailed {
			return false, k.podError(ctx, c, p, fmt.Sprintf("the pod failed: %s %s", p.Status.Reason, p.Status.Message))
		}
		last = pendingReason(p)
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		p := w.pod(podName(id))
		why := last
		if p != nil {
			why = strings.TrimSuffix(last+"; "+k.events(context.WithoutCancel(ctx), c, ns, p.Name, "Pod", last), "; ")
		}
		return fmt.Errorf("%s did not start in %ds (%s)%s", describe("pod", ns, podName(id)), k.settings.StartTimeout, orWaiting(why), k.claimNote(context.WithoutCancel(ctx), c, ns, id))
	}
	return err
}

func orWaiting(s string) string {
	if s == "" {
		return "still waiting"
	}
	return s
}

// fatalWaiting are the reasons a container waits that do not end by themselves.
var fatalWaiting = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true,
	"InvalidImageName": true, "CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true}

// pendingReason says what a pod waits for: its scheduling, or a container's reason.
func pendingReason(p *corev1.Pod) string {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
			return "not scheduled: " + cond.Message
		}
	}
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.State.Waiting != nil && s.State.Waiting.Reason != "" {
			return s.Name + ": " + s.State.Waiting.Reason
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if t := s.LastTerminationState.Terminated; s.Name == sandboxContainer && t != nil {
			return fmt.Sprintf("its guest is starting again (it ended: %s, exit %d)", t.Reason, t.ExitCode)
		}
	}
	return string(p.Status.Phase)
}

// podError is a pod's failure, with its warning events and what to do.
func (k *Kubernetes) podError(ctx context.Context, c *cluster, p *corev1.Pod, what string) error {
	msg := fmt.Sprintf("%s cannot start: %s", describe("pod", p.Namespace, p.Name), strings.TrimSpace(what))
	if ev := k.events(context.WithoutCancel(ctx), c, p.Namespace, p.Name, "Pod", msg); ev != "" {
		msg += " (events: " + ev + ")"
	}
	if strings.Contains(what, "ErrImageNeverPull") || strings.Contains(what, "ImagePull") {
		img := p.Spec.Containers[0].Image
		if hasRegistry(img) {
			msg += fmt.Sprintf("; check that the nodes can pull %s from its registry (and its imagePullSecrets)", img)
		} else {
			msg += fmt.Sprintf("; load the image into the cluster's nodes: paddock image load %s --backend kubernetes, or use an image from a registry (--image REGISTRY/IMAGE)", img)
		}
	}
	return errors.New(msg)
}

// events are the last warning events of an object, newest last, in one line; those
// whose message is already in known, or that do not bear on starting, are left out.
func (k *Kubernetes) events(ctx context.Context, c *cluster, ns, name, kind, known string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var evs corev1.EventList
	err := list(ctx, c.api.core, ns, "events", &metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.name": name, "involvedObject.kind": kind, "type": corev1.EventTypeWarning}.String()}, &evs)
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	var items []corev1.Event
	for _, e := range evs.Items {
		msg := strings.TrimSpace(e.Message)
		if !ignoredEvents[e.Reason] && !strings.Contains(known, msg) && !strings.Contains(known, strings.TrimPrefix(msg, "Error: ")) {
			items = append(items, e)
		}
	}
	sort.Slice(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
	if len(items) > 3 {
		items = items[len(items)-3:]
	}
	var out []string
	for _, e := range items {
		out = append(out, e.Reason+": "+strings.TrimSpace(e.Message))
	}
	return strings.Join(out, "; ")
}

// ignoredEvents are warnings about the cluster, not the sandbox: a cluster with no DNS
// service (pods fall back to the node's resolver, and a closed sandbox has none anyway).
var ignoredEvents = map[string]bool{"MissingClusterDNS": true}

func eventTime(e corev1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

// claimNote says why a claim is not bound, when it is not.
func (k *Kubernetes) claimNote(ctx context.Context, c *cluster, ns string, id backend.ID) string {
	var pvc corev1.PersistentVolumeClaim
	if err := get(ctx, c.api.core, ns, "persistentvolumeclaims", claimName(id), &pvc); err != nil || pvc.Status.Phase == corev1.ClaimBound {
		return ""
	}
	note := fmt.Sprintf("; its volume claim is %s", pvc.Status.Phase)
	if ev := k.events(ctx, c, ns, pvc.Name, "PersistentVolumeClaim", ""); ev != "" {
		note += " (" + ev + ")"
	}
	return note + ": check the cluster has a default storage class with a provisioner, or set storage_class in [backends.kubernetes]"
}

// Stop implements backend.Backend: it deletes the pod and keeps the claim.
func (k *Kubernetes) Stop(ctx context.Context, id backend.ID) error {
	rec, c, err := k.locate(id)
	if err != nil {
		return err
	}
	w, err := c.watch(ctx, rec.Namespace)
	if err != nil {
		return err
	}
	rec.Running = false
	if err := k.save(id, rec); err != nil {
		return err
	}
	return k.deletePod(ctx, c, w, rec.Namespace, id, 2)
}

// deletePod deletes the sandbox's pod and waits until it is gone, so that its claim is
// free for the next one.
func (k *Kubernetes) deletePod(ctx context.Context, c *cluster, w *watch, ns string, id backend.ID, grace int64) error {
	err := remove(ctx, c.api.core, ns, "pods", podName(id), &metav1.DeleteOptions{GracePeriodSeconds: ptr.To(grace)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", describe("pod", ns, podName(id)), err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.until(wctx, func() (bool, error) { return w.pod(podName(id)) == nil, nil }); err != nil {
		return fmt.Errorf("%s is not gone: %w", describe("pod", ns, podName(id)), err)
	}
	return nil
}

// Destroy implements backend.Backend: the pod, the NetworkPolicy and the claim, then the
// record; it returns once the pod and the claim are gone.
func (k *Kubernetes) Destroy(ctx context.Context, id backend.ID) error {
	rec, c, err := k.locate(id)
	if errors.Is(err, backend.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	w, err := c.watch(ctx, rec.Namespace)
	if err != nil {
		return err
	}
	if err := k.deletePod(ctx, c, w, rec.Namespace, id, 0); err != nil {
		return err
	}
	if err := remove(ctx, c.api.networking, rec.Namespace, "networkpolicies", policyName(id), &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the sandbox's NetworkPolicy: %w", err)
	}
	if err := remove(ctx, c.api.core, rec.Namespace, "persistentvolumeclaims", claimName(id), &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the sandbox's volume claim: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := w.until(wctx, func() (bool, error) { return w.claim(claimName(id)) == nil, nil }); err != nil {
		return fmt.Errorf("volume claim %s/%s is not gone: %w", rec.Namespace, claimName(id), err)
	}
	k.forget(id)
	return nil
}

// State implements backend.Backend, from the namespace's watch.
func (k *Kubernetes) State(ctx context.Context, id backend.ID) (backend.Status, error) {
	rec, c, err := k.locate(id)
	if errors.Is(err, backend.ErrNotFound) {
		return backend.Status{State: backend.StateMissing}, nil
	}
	if err != nil {
		return backend.Status{}, err
	}
	w, err := c.watch(ctx, rec.Namespace)
	if err != nil {
		return backend.Status{}, err
	}
	pod, pvc := w.pod(podName(id)), w.claim(claimName(id))
	switch {
	case pod == nil && pvc == nil:
		return backend.Status{State: backend.StateMissing}, nil
	case pvc == nil:
		return backend.Status{State: backend.StateError, Detail: fmt.Sprintf("its volume claim %s/%s is gone", rec.Namespace, claimName(id))}, nil
	case pod == nil && rec.Running:
		return backend.Status{State: backend.StateError, Detail: fmt.Sprintf("its pod %s is gone (deleted outside paddock, or its node lost); `paddock start` makes it again from its volume", podName(id))}, nil
	case pod == nil:
		if rec.Started {
			return backend.Status{State: backend.StateStopped}, nil
		}
		return backend.Status{State: backend.StateCreated}, nil
	case pod.DeletionTimestamp != nil:
		return backend.Status{State: backend.StateStopped, Detail: "its pod is being deleted"}, nil
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		return backend.Status{State: backend.StateError, Detail: fmt.Sprintf("its pod %s ended: %s %s; `paddock start` makes it again from its volume",
			podName(id), pod.Status.Reason, strings.TrimSpace(pod.Status.Message))}, nil
	case containerRunning(pod, sandboxContainer):
		return backend.Status{State: backend.StateRunning}, nil
	}
	return backend.Status{State: backend.StateCreated, Detail: "its pod is starting: " + pendingReason(pod)}, nil
}

// save writes the sandbox's record.
func (k *Kubernetes) save(id backend.ID, rec *record) error {
	if rec.Running {
		rec.Started = true
	}
	if k.dir == "" {
		return nil
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := k.recordPath(id) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, k.recordPath(id))
}

// prepared says whether the prepare container ended well, which it does only once told
// go, waiting a few seconds for the kubelet to report a container that is still running
// as the API server last heard; it fails with the container's output if it ended badly.
func (k *Kubernetes) prepared(ctx context.Context, c *cluster, ns, pod string) (bool, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var p corev1.Pod
		if err := get(ctx, c.api.core, ns, "pods", pod, &p); err != nil {
			return false, nil
		}
		for _, s := range p.Status.InitContainerStatuses {
			if s.Name != prepareContainer || s.State.Terminated == nil {
				continue
			}
			if s.State.Terminated.ExitCode == 0 {
				return true, nil
			}
			out, _ := c.api.core.Get().Namespace(ns).Resource("pods").Name(pod).SubResource("log").
				VersionedParams(&corev1.PodLogOptions{Container: prepareContainer}, params).DoRaw(ctx)
			return false, fmt.Errorf("the prepare container of %s failed (exit %d): %s", describe("pod", ns, pod),
				s.State.Terminated.ExitCode, strings.TrimSpace(string(out)))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}
