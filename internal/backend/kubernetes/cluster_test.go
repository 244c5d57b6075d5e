package kubernetes_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/kubernetes"
	"github.com/paddockhq/paddock/internal/backend/kubernetes/k8stest"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/sandbox"
)

// clientset is a client of the test cluster, as the tests' own eyes.
func clientset(t testing.TB) k8s.Interface {
	t.Helper()
	_, kubeconfig := k8stest.State(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// up makes and starts a sandbox and connects to its guest.
func up(t *testing.T, b *kubernetes.Kubernetes, agent sandbox.GuestBinary, open bool) (backend.ID, *guestclient.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := backend.ID(fmt.Sprintf("t%d", time.Now().UnixNano()%1e9))
	if err := b.Create(ctx, backend.Spec{ID: id, Name: "k8s-" + string(id), GuestBinary: agent.Path, GuestSHA256: agent.SHA256, OpenNetwork: open}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), id) })
	if err := b.Start(ctx, id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return id, connect(t, b, id)
}

func connect(t *testing.T, b *kubernetes.Kubernetes, id backend.ID) *guestclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return b.Dial(ctx, id) }, "test")
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sh runs a shell command in the sandbox and returns its exit code and output.
func sh(t *testing.T, c *guestclient.Client, script string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out strings.Builder
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"bash", "-c", script}, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return code, out.String()
}

// reach is a command that exits 0 when a TCP connection to addr opens within 3 s.
func reach(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("timeout 3 bash -c 'exec 3<>/dev/tcp/%s/%s'", host, port)
}

// TestClosedNetwork: a closed sandbox's pod reaches nothing, not another pod, the node,
// the API server or the outside, while an ordinary pod of the same namespace, on the same
// network, does; and its default-deny NetworkPolicy is there for plugins that enforce it.
func TestClosedNetwork(t *testing.T) {
	b, agent := newBackend(t)
	cs := clientset(t)
	ns := b.Namespace()
	id, c := up(t, b, agent, false)
	ctx := context.Background()

	// An ordinary pod: a web server, and the control that shows the network works.
	target := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "target", Namespace: ns},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
			Containers: []corev1.Container{{Name: "web", Image: "localhost/paddock-k8s/busybox:1", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "mkdir -p /www && echo hello > /www/index.html && exec httpd -f -p 8080 -h /www"}}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, target, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.CoreV1().Pods(ns).Delete(context.Background(), "target", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	})
	var podIP string
	deadline := time.Now().Add(time.Minute)
	for podIP == "" {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			podIP = p.Status.PodIP
		}
		if time.Now().After(deadline) {
			t.Fatal("the target pod did not run")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A listener on the host, which ordinary pods reach through their gateway.
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte("host\n"))
			conn.Close()
		}
	}()
	hostPort := ln.Addr().(*net.TCPAddr).Port
	gateway := gatewayOf(podIP)
	hostAddr := net.JoinHostPort(gateway, fmt.Sprint(hostPort))

	// The control: the ordinary pod reaches the host through the gateway, and the host
	// reaches the web server, so what the sandbox cannot reach is there to reach.
	out, err := k8stest.Kubectl(t, "-n", ns, "exec", "target", "--", "nc", "-w", "3", gateway, fmt.Sprint(hostPort)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "host") {
		t.Fatalf("control: an ordinary pod cannot reach the host at %s: %v %s", hostAddr, err, out)
	}
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort(podIP, "8080"), 3*time.Second); err != nil {
		t.Fatalf("control: the host cannot reach the target pod: %v", err)
	} else {
		conn.Close()
	}

	for what, addr := range map[string]string{
		"another pod":                   net.JoinHostPort(podIP, "8080"),
		"the host through the gateway":  hostAddr,
		"the kubelet on the node's IP":  "192.0.2.2:10250",
		"the API server's service IP":   "10.96.0.1:443",
		"the API server on the node IP": "192.0.2.2:6443",
		"the outside":                   "1.1.1.1:443",
		"the cloud metadata service":    "169.254.169.254:80",
	} {
		if code, out := sh(t, c, reach(addr)); code == 0 {
			t.Errorf("the sandbox reached %s at %s: %s", what, addr, out)
		}
	}
	// Loopback alone: no route, no interface up but lo.
	if _, out := sh(t, c, "tail -n +2 /proc/net/route; grep -v ' lo$' /proc/net/ipv6_route; true"); strings.TrimSpace(out) != "" {
		t.Errorf("the sandbox has routes beyond loopback:\n%s", out)
	}
	if code, _ := sh(t, c, "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); s.listen(); c=socket.create_connection(s.getsockname()); print(\"ok\")'"); code != 0 {
		t.Error("loopback does not work in the sandbox")
	}

	// The NetworkPolicy: every ingress and egress of the pod denied.
	pol, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, "paddock-"+string(id), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no NetworkPolicy for the sandbox: %v", err)
	}
	if pol.Spec.PodSelector.MatchLabels[kubernetes.LabelSandbox] != string(id) || len(pol.Spec.Ingress) != 0 || len(pol.Spec.Egress) != 0 ||
		len(pol.Spec.PolicyTypes) != 2 {
		t.Errorf("the NetworkPolicy does not deny all to the sandbox's pod: %+v", pol.Spec)
	}
}

// gatewayOf is the first address of a pod's /24 (the bridge's).
func gatewayOf(podIP string) string {
	ip := net.ParseIP(podIP).To4()
	return net.IPv4(ip[0], ip[1], ip[2], 1).String()
}

// TestPodHardening: what the sandbox's pod is made with, read back from the API server.
func TestPodHardening(t *testing.T) {
	b, agent := newBackend(t)
	cs := clientset(t)
	id, c := up(t, b, agent, false)
	p, err := cs.CoreV1().Pods(b.Namespace()).Get(context.Background(), "paddock-"+string(id), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps := p.Spec
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token")
	}
	sc := ps.SecurityContext
	if sc == nil || !*sc.RunAsNonRoot || *sc.RunAsUser != 1000 || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context: %+v", sc)
	}
	for _, ctr := range append(ps.InitContainers, ps.Containers...) {
		csc := ctr.SecurityContext
		if csc == nil || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation || len(csc.Capabilities.Drop) != 1 || csc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("container %s: %+v", ctr.Name, csc)
		}
		if ctr.Name != "prepare" && (len(csc.Capabilities.Add) != 0 || csc.RunAsUser != nil || csc.RunAsNonRoot != nil) {
			t.Errorf("container %s adds capabilities %v or runs as another user than the pod's", ctr.Name, csc.Capabilities.Add)
		}
		if ctr.Name == "prepare" && fmt.Sprint(csc.Capabilities.Add) != "[CHOWN NET_ADMIN]" {
			t.Errorf("the prepare container has %v, want CHOWN and NET_ADMIN alone", csc.Capabilities.Add)
		}
		lim := ctr.Resources.Limits
		if lim.Cpu().IsZero() || lim.Memory().IsZero() || lim.StorageEphemeral().IsZero() {
			t.Errorf("container %s has no CPU, memory or ephemeral-storage limit: %v", ctr.Name, lim)
		}
	}
	// Inside: no token, no capability, the root read-only.
	if code, out := sh(t, c, "ls /var/run/secrets/kubernetes.io 2>&1; grep CapEff /proc/self/status; touch /usr/x 2>&1; id -u"); code != 0 ||
		strings.Contains(out, "serviceaccount") || !strings.Contains(out, "0000000000000000") || !strings.Contains(out, "Read-only file system") || !strings.HasSuffix(strings.TrimSpace(out), "1000") {
		t.Errorf("inside the sandbox: %s", out)
	}
}

// TestStopStartAndLostPod: stop deletes the pod and keeps the claim, start brings the
// workspace back; a pod deleted behind paddock's back (an eviction, a node lost) shows
// as broken and start makes it again from its claim; remove leaves nothing.
func TestStopStartAndLostPod(t *testing.T) {
	b, agent := newBackend(t)
	cs := clientset(t)
	ns := b.Namespace()
	ctx := context.Background()
	id, c := up(t, b, agent, false)
	if code, out := sh(t, c, "echo kept > /workspace/work.txt && echo dot > ~/.dotfile"); code != 0 {
		t.Fatal(out)
	}
	c.Close()

	if err := b.Stop(ctx, id); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if st, _ := b.State(ctx, id); st.State != backend.StateStopped {
		t.Fatalf("after stop: %+v", st)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "paddock-"+string(id), metav1.GetOptions{}); err == nil {
		t.Fatal("the pod is still there after stop")
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "paddock-"+string(id), metav1.GetOptions{}); err != nil {
		t.Fatalf("the claim is gone after stop: %v", err)
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	c = connect(t, b, id)
	if _, out := sh(t, c, "cat /workspace/work.txt ~/.dotfile"); out != "kept\ndot\n" {
		t.Fatalf("after stop and start: %q", out)
	}
	c.Close()

	// The guest killed, as by the OOM killer: the kubelet makes its container again (the
	// init container does not run again), and Start waits for the guest to answer.
	pid := guestPID(t, "k8s-"+string(id))
	if pid <= 0 {
		t.Fatal("the guest's process is not on this host")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the guest: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Until the API server has the container down (it may be back already).
		if st, _ := b.State(ctx, id); st.State != backend.StateRunning || guestPID(t, "k8s-"+string(id)) != pid && guestPID(t, "k8s-"+string(id)) != 0 {
			t.Logf("the guest killed: %+v", st)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed guest's container never showed down")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatalf("Start after the guest was killed: %v", err)
	}
	c = connect(t, b, id)
	if _, out := sh(t, c, "cat /workspace/work.txt"); out != "kept\n" {
		t.Fatalf("after the guest came back: %q", out)
	}
	c.Close()

	// The pod lost behind paddock's back.
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "paddock-"+string(id), metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(time.Minute)
	for {
		st, err := b.State(ctx, id)
		if err == nil && st.State == backend.StateError && strings.Contains(st.Detail, "start") {
			t.Logf("lost pod: %s", st.Detail)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a lost pod shows as %+v, %v", st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatalf("Start after the pod was lost: %v", err)
	}
	c = connect(t, b, id)
	if _, out := sh(t, c, "cat /workspace/work.txt"); out != "kept\n" {
		t.Fatalf("after the pod was made again: %q", out)
	}
	c.Close()

	// The pod evicted (its status set as the kubelet sets it for an eviction): ls shows
	// why, and start makes it again from the claim. The kubelet, whose container still
	// runs, may write its own status back over the one set here; it is set again then.
	evict := func() {
		t.Helper()
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "paddock-"+string(id), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodFailed {
			return
		}
		p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	evict()
	deadline = time.Now().Add(time.Minute)
	for i := 1; ; i++ {
		st, err := b.State(ctx, id)
		if err == nil && st.State == backend.StateError && strings.Contains(st.Detail, "Evicted") && strings.Contains(st.Detail, "paddock start") {
			t.Logf("evicted: %s", st.Detail)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an evicted pod shows as %+v, %v", st, err)
		}
		time.Sleep(50 * time.Millisecond)
		if i%20 == 0 {
			evict()
		}
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatalf("Start after an eviction: %v", err)
	}
	c = connect(t, b, id)
	if _, out := sh(t, c, "cat /workspace/work.txt"); out != "kept\n" {
		t.Fatalf("after the evicted pod was made again: %q", out)
	}
	c.Close()

	if err := b.Destroy(ctx, id); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if left := leftovers(t, cs, ns, id); len(left) > 0 {
		t.Fatalf("left after remove: %v", left)
	}
	if st, _ := b.State(ctx, id); st.State != backend.StateMissing {
		t.Fatalf("after remove: %+v", st)
	}
}

// leftovers lists what a sandbox left in the cluster.
func leftovers(t *testing.T, cs k8s.Interface, ns string, id backend.ID) []string {
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: kubernetes.LabelSandbox + "=" + string(id)}
	var left []string
	if l, err := cs.CoreV1().Pods(ns).List(ctx, sel); err == nil {
		for _, p := range l.Items {
			left = append(left, "pod "+p.Name)
		}
	}
	if l, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel); err == nil {
		for _, p := range l.Items {
			left = append(left, "claim "+p.Name)
		}
	}
	if l, err := cs.NetworkingV1().NetworkPolicies(ns).List(ctx, sel); err == nil {
		for _, p := range l.Items {
			left = append(left, "networkpolicy "+p.Name)
		}
	}
	return left
}

// TestRuntimeClass: with runtime_class set, the sandbox's pod runs under that
// RuntimeClass (the test cluster's "runc"; gVisor's cannot run on it, see
// scripts/k8s-up.sh), and a class the cluster lacks is refused at start, saying so.
func TestRuntimeClass(t *testing.T) {
	_, agent := newBackend(t)
	for class, want := range map[string]string{"runc": "", "gvisor-missing": `RuntimeClass "gvisor-missing" not found`} {
		opts := k8stest.Options(t, "")
		opts["runtime_class"] = class
		b, err := kubernetes.New(backend.Env{Dir: t.TempDir(), Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteNamespace(t, b.Namespace()) })
		if want != "" {
			ctx := context.Background()
			spec := backend.Spec{ID: "rc", Name: "rc", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}
			if err := b.Create(ctx, spec); err != nil {
				t.Fatal(err)
			}
			err := b.Start(ctx, "rc")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Start with runtime_class %s: %v, want %q", class, err, want)
			}
			b.Destroy(ctx, "rc")
			continue
		}
		id, c := up(t, b, agent, false)
		p, err := clientset(t).CoreV1().Pods(b.Namespace()).Get(context.Background(), "paddock-"+string(id), metav1.GetOptions{})
		if err != nil || p.Spec.RuntimeClassName == nil || *p.Spec.RuntimeClassName != class {
			t.Fatalf("the pod's runtime class: %v %v", p.Spec.RuntimeClassName, err)
		}
		if code, out := sh(t, c, "echo hi"); code != 0 || out != "hi\n" {
			t.Fatalf("under RuntimeClass %s: %d %q", class, code, out)
		}
	}
}

// guestPID is the host pid of the resident guest of the named sandbox (the test cluster's
// node is this machine), 0 when there is none.
func guestPID(t *testing.T, name string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.Contains(string(cmdline), "serve\x00--socket") && strings.HasSuffix(string(cmdline), "--sandbox\x00"+name+"\x00") {
			return pid
		}
	}
	return 0
}
