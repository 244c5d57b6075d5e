package kubernetes_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/kubernetes"
	"github.com/paddockhq/paddock/internal/backend/kubernetes/k8stest"
)

// available constructs the backend with options over the test cluster's and asks it.
func available(t *testing.T, opts map[string]any) error {
	t.Helper()
	b, err := kubernetes.New(backend.Env{Dir: t.TempDir(), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	return b.Available(context.Background())
}

func wantUnavailable(t *testing.T, err error, reason, fix string) {
	t.Helper()
	var ue *backend.UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(ue.Reason, reason) || !strings.Contains(ue.Fix, fix) {
		t.Errorf("Available = %v; want unavailable for %q with a fix saying %q", err, reason, fix)
	}
}

// TestDoctor: each way the cluster can be unusable is told apart, with what to do: no
// kubeconfig, an API server that does not answer, a storage class that is not there,
// and a user without paddock's permissions, listed one by one; the Role in
// docs/kubernetes-rbac.yaml is exactly enough to run a sandbox.
func TestDoctor(t *testing.T) {
	opts := k8stest.Options(t, "")
	_, kubeconfig := k8stest.State(t)
	with := func(key string, v any) map[string]any {
		o := map[string]any{}
		for k, v := range opts {
			o[k] = v
		}
		o[key] = v
		return o
	}

	t.Run("NoKubeconfig", func(t *testing.T) {
		// Serial: client-go finds a kubeconfig through this process's KUBECONFIG and HOME.
		t.Setenv("KUBECONFIG", "")
		t.Setenv("HOME", t.TempDir())
		o := with("kubeconfig", "")
		delete(o, "kubeconfig")
		wantUnavailable(t, available(t, o), "no kubeconfig", "KUBECONFIG")
		wantUnavailable(t, available(t, with("kubeconfig", "/nonexistent/kubeconfig")), "no kubeconfig at /nonexistent/kubeconfig", "kubeconfig")
	})
	t.Run("Unreachable", func(t *testing.T) {
		cfg, err := clientcmd.LoadFromFile(kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cfg.Clusters {
			c.Server = "https://127.0.0.1:1"
		}
		path := filepath.Join(t.TempDir(), "kubeconfig")
		clientcmd.WriteToFile(*cfg, path)
		wantUnavailable(t, available(t, with("kubeconfig", path)), "does not answer", "kubectl cluster-info")
	})
	t.Run("NoStorageClass", func(t *testing.T) {
		wantUnavailable(t, available(t, with("storage_class", "fast-ssd")), `no storage class "fast-ssd" (it has: paddock-local)`, "storage_class")
	})
	t.Run("Permissions", func(t *testing.T) {
		ns := opts["namespace"].(string)
		k8stest.Kubectl(t, "create", "namespace", ns).Run()
		t.Cleanup(func() { k8stest.Kubectl(t, "delete", "namespace", ns, "--wait=false").Run() })
		if out, err := k8stest.Kubectl(t, "-n", ns, "create", "serviceaccount", "paddock").CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		token, err := k8stest.Kubectl(t, "-n", ns, "create", "token", "paddock").Output()
		if err != nil {
			t.Fatal(err)
		}
		limited := tokenKubeconfig(t, kubeconfig, strings.TrimSpace(string(token)))
		err = available(t, with("kubeconfig", limited))
		var ue *backend.UnavailableError
		if !errors.As(err, &ue) {
			t.Fatalf("a user with no permission: %v", err)
		}
		for _, p := range kubernetes.Permissions {
			if !strings.Contains(ue.Reason, p.String()) {
				t.Errorf("the doctor does not list %q: %s", p, ue.Reason)
			}
		}
		if !strings.Contains(ue.Fix, "docs/kubernetes-rbac.yaml") {
			t.Errorf("the fix does not point at the Role: %s", ue.Fix)
		}
		t.Logf("without the Role: %v (fix: %s)", err, ue.Fix)

		// With the Role and nothing else: available, and a sandbox runs, stops and goes.
		_, self, _, _ := runtime.Caller(0)
		role := filepath.Join(filepath.Dir(self), "..", "..", "..", "docs", "kubernetes-rbac.yaml")
		if out, err := k8stest.Kubectl(t, "-n", ns, "apply", "-f", role).CombinedOutput(); err != nil {
			t.Fatalf("apply the Role: %v %s", err, out)
		}
		o := with("kubeconfig", limited)
		b, err := kubernetes.New(backend.Env{Dir: t.TempDir(), Options: o})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Available(context.Background()); err != nil {
			t.Fatalf("with docs/kubernetes-rbac.yaml: %v", err)
		}
		_, agent := newBackend(t)
		id, c := up(t, b, agent, false)
		if code, out := sh(t, c, "echo hi"); code != 0 || out != "hi\n" {
			t.Fatalf("exec as the Role's user: %d %q", code, out)
		}
		c.Close()
		if err := b.Stop(context.Background(), id); err != nil {
			t.Fatalf("Stop as the Role's user: %v", err)
		}
		if err := b.Destroy(context.Background(), id); err != nil {
			t.Fatalf("Destroy as the Role's user: %v", err)
		}
	})
	t.Run("PodStuck", func(t *testing.T) {
		b, agent := newBackend(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// An image the nodes do not have: said at once, with how to load it.
		spec := backend.Spec{ID: "stuckimg", Name: "stuck", GuestBinary: agent.Path, GuestSHA256: agent.SHA256, Image: "paddock/not-loaded:1"}
		if err := b.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Destroy(context.Background(), spec.ID) })
		err := b.Start(ctx, spec.ID)
		t.Logf("an image not loaded: %v", err)
		if err == nil || !strings.Contains(err.Error(), "ErrImageNeverPull") || !strings.Contains(err.Error(), "paddock image load paddock/not-loaded:1 --backend kubernetes") {
			t.Errorf("Start with an image the nodes lack: %v", err)
		}
		// A pod no node can hold: said when start gives up, with the scheduler's reason.
		o := k8stest.Options(t, b.Namespace())
		o["request_memory"], o["start_timeout"] = "900Gi", 5
		big, err := kubernetes.New(backend.Env{Dir: t.TempDir(), Options: o})
		if err != nil {
			t.Fatal(err)
		}
		spec = backend.Spec{ID: "stuckbig", Name: "big", GuestBinary: agent.Path, GuestSHA256: agent.SHA256, MemoryBytes: 1 << 40}
		if err := big.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { big.Destroy(context.Background(), spec.ID) })
		err = big.Start(ctx, spec.ID)
		t.Logf("a pod too big: %v", err)
		if err == nil || !strings.Contains(err.Error(), "not scheduled") || !strings.Contains(err.Error(), "Insufficient memory") {
			t.Errorf("Start of a pod no node can hold: %v", err)
		}
	})
}

// tokenKubeconfig writes a kubeconfig for the cluster of kubeconfig that authenticates
// with a service account's token.
func tokenKubeconfig(t *testing.T, kubeconfig, token string) string {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{"sa": {Token: token}}
	for _, c := range cfg.Contexts {
		c.AuthInfo = "sa"
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o600)
	return path
}
