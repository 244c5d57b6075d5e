package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend/kubernetes/k8stest"
)

// TestVerifyKubernetes: paddock verify on the tests' cluster, which the config names
// (its kubeconfig, not its pods' process limit: verify reads that from the kubelet).
// Every check holds, and nothing is left in the namespace.
func TestVerifyKubernetes(t *testing.T) {
	config := regexp.MustCompile(`(?m)^pids_limit = .*\n`).ReplaceAllString(k8stest.Config(t), "")
	h, _ := e2eHome(t)
	home := h.Dir
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, errOut, code := newPaddock(h)("", "verify", "--backend", "kubernetes")
	t.Logf("verify --backend kubernetes: %s", time.Since(start).Round(time.Second))
	if code != 0 {
		t.Fatalf("verify: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		`(?m)^kubernetes \(isolation: container\)$`,
		`(?m)^  PASS +Limits$`,
		`(?m)^  PASS +AgentUntraceable$`,
		`(?m)^kubernetes: holds: 2[0-9] passed, 0 failed, [0-9]+ not applicable, nothing left behind, in [0-9]+s$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("verify's report has no %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("verify's report has a FAIL:\n%s", out)
	}
	ns := regexp.MustCompile(`(?m)^namespace = "(.*)"$`).FindStringSubmatch(config)[1]
	if left, _ := k8stest.Kubectl(t, "get", "pods,pvc,networkpolicies", "-n", ns, "-o", "name").CombinedOutput(); strings.TrimSpace(string(left)) != "" {
		t.Errorf("verify left in namespace %s: %s", ns, left)
	}
}
