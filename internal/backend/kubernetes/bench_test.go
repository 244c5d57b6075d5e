package kubernetes_test

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/kubernetes"
	"github.com/paddockhq/paddock/internal/backend/kubernetes/k8stest"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/sandbox"
)

func ratio(b *testing.B, ours, base time.Duration, unit string) {
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N)/1e6, "ms/"+unit)
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N)/1e6, "baseline-ms/"+unit)
	b.ReportMetric(float64(ours)/float64(base), "x-baseline")
}

// createToFirstExec makes a sandbox, starts it, connects and runs `true`, and returns how
// long that took; the sandbox is removed after, untimed.
func createToFirstExec(b *testing.B, k *kubernetes.Kubernetes, agent sandbox.GuestBinary, id backend.ID) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if err := k.Create(ctx, backend.Spec{ID: id, Name: string(id), GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
		b.Fatalf("Create: %v", err)
	}
	defer k.Destroy(context.Background(), id)
	if err := k.Start(ctx, id); err != nil {
		b.Fatalf("Start: %v", err)
	}
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return k.Dial(ctx, id) }, "bench")
	if err != nil {
		b.Fatalf("connect: %v", err)
	}
	defer c.Close()
	if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
		b.Fatalf("exec: %d %v", code, err)
	}
	return time.Since(start)
}

// plainPod makes a pod of the sandbox image with client-go, waits for it to run, and
// runs `true` in it through the API server's exec: the baseline of a create.
func plainPod(b *testing.B, name, ns string) time.Duration {
	cs := clientset(b)
	ctx := context.Background()
	start := time.Now()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To(int64(0)),
			Containers: []corev1.Container{{Name: "c", Image: kubernetes.DefaultImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "infinity"}}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	defer cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		b.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && p.Status.Phase == corev1.PodRunning {
			break
		}
	}
	w.Stop()
	if out, err := k8stest.Kubectl(b, "-n", ns, "exec", name, "--", "true").CombinedOutput(); err != nil {
		b.Fatalf("kubectl exec: %v %s", err, out)
	}
	return time.Since(start)
}

// BenchmarkCreateToFirstExec: Create + Start + connect + `exec true`, against a plain pod
// of the same image made with client-go, waited for, and `kubectl exec POD -- true`, in
// the same run.
func BenchmarkCreateToFirstExec(b *testing.B) {
	k, agent := newBackend(b)
	ensureNamespace(b, k.Namespace())
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		ours += createToFirstExec(b, k, agent, backend.ID(fmt.Sprintf("bc%d", i)))
		base += plainPod(b, fmt.Sprintf("plain%d", i), k.Namespace())
	}
	ratio(b, ours, base, "create")
}

// BenchmarkExec: `true` through the guest's connection against `kubectl exec POD --
// true`, in the same run and the same pod.
func BenchmarkExec(b *testing.B) {
	k, agent := newBackend(b)
	id := backend.ID("bexec")
	ctx := context.Background()
	if err := k.Create(ctx, backend.Spec{ID: id, Name: "bexec", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
		b.Fatal(err)
	}
	defer k.Destroy(ctx, id)
	if err := k.Start(ctx, id); err != nil {
		b.Fatal(err)
	}
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return k.Dial(ctx, id) }, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var ours, base time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
			b.Fatalf("exec: %d %v", code, err)
		}
		ours += time.Since(start)
		start = time.Now()
		if out, err := k8stest.Kubectl(b, "-n", k.Namespace(), "exec", "paddock-bexec", "-c", "sandbox", "--", "true").CombinedOutput(); err != nil {
			b.Fatalf("kubectl exec: %v %s", err, out)
		}
		base += time.Since(start)
	}
	ratio(b, ours, base, "exec")
}

// BenchmarkScale50: 50 sandboxes made and started at once, each until its guest
// answers: the time until all run, the 95th percentile of one, and the API server
// requests the backend made per sandbox (its one watch included).
func BenchmarkScale50(b *testing.B) {
	const n = 50
	for i := 0; i < b.N; i++ {
		k0, agent := newBackend(b)
		// A backend of its own, counting from its first request.
		k, err := kubernetes.New(backend.Env{Dir: b.TempDir(), Options: k8stest.Options(b, k0.Namespace())})
		if err != nil {
			b.Fatal(err)
		}
		var requests atomic.Int64
		kubernetes.CountRequests(k, &requests)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		times := make([]time.Duration, n)
		var wg sync.WaitGroup
		start := time.Now()
		for j := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := backend.ID(fmt.Sprintf("s%d-%d", i, j))
				t0 := time.Now()
				if err := k.Create(ctx, backend.Spec{ID: id, Name: string(id), GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
					b.Errorf("Create %s: %v", id, err)
					return
				}
				if err := k.Start(ctx, id); err != nil {
					b.Errorf("Start %s: %v", id, err)
					return
				}
				times[j] = time.Since(t0)
			}()
		}
		wg.Wait()
		total := time.Since(start)
		made := requests.Load()
		sort.Slice(times, func(a, c int) bool { return times[a] < times[c] })
		b.ReportMetric(total.Seconds(), "s-all-running")
		b.ReportMetric(times[n*95/100-1].Seconds(), "s-p95")
		b.ReportMetric(float64(made)/n, "requests/sandbox")
		var rm sync.WaitGroup
		for j := range n {
			rm.Add(1)
			go func() {
				defer rm.Done()
				k.Destroy(context.Background(), backend.ID(fmt.Sprintf("s%d-%d", i, j)))
			}()
		}
		rm.Wait()
		cancel()
	}
}

// ensureNamespace makes the namespace (a backend makes its own on first Create).
func ensureNamespace(b *testing.B, ns string) {
	k8stest.Kubectl(b, "create", "namespace", ns).Run()
}
