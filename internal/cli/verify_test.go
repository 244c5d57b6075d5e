package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/conform"
)

// TestVerifyFailedCheck: a check that fails makes verify exit 6, naming the backend and
// the check, and the report shows it FAILED with what the check found.
func TestVerifyFailedCheck(t *testing.T) {
	results, err := conform.RunFunc(context.Background(), func(t conform.T) {
		t.Run("Exec", func(t conform.T) {})
		t.Run("HostSecrets", func(t conform.T) { t.Fatalf("read the host's secret at /etc/x") })
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := verifyReport{Backends: []backendVerify{{Name: "bwrap", Isolation: backend.IsolationNamespaces,
		Checks: results, Passed: 1, Failed: 1, LeftBehind: []string{}}}}
	err = verifyOutcome(r, nil)
	if err == nil || ExitCode(err) != 6 || !strings.Contains(err.Error(), "bwrap: HostSecrets") || strings.Contains(err.Error(), "Exec") {
		t.Fatalf("verify's error = %v (exit %d), want exit 6 naming bwrap: HostSecrets alone", err, ExitCode(err))
	}
	var out strings.Builder
	writeVerify(&out, r)
	for _, want := range []string{"\n  PASS            Exec\n", "\n  FAIL            HostSecrets\n      read the host's secret at /etc/x\n",
		"\nbwrap: FAILED: 1 passed, 1 failed, 0 not applicable, nothing left behind"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}

	// What a destroyed sandbox left on the host fails verify too.
	r.Backends[0].Checks, r.Backends[0].Failed = results[:1], 0
	r.Backends[0].LeftBehind = []string{"mount /tmp/x"}
	if err := verifyOutcome(r, nil); ExitCode(err) != 6 || !strings.Contains(err.Error(), "bwrap: left behind") {
		t.Fatalf("verify's error = %v, want exit 6 for what was left behind", err)
	}
	// A clean report exits 0; one with a named backend that cannot run here exits 5.
	r.Backends[0].LeftBehind = nil
	if err := verifyOutcome(r, nil); err != nil {
		t.Fatalf("a clean report: %v", err)
	}
	if err := verifyOutcome(r, []string{"docker"}); ExitCode(err) != 5 {
		t.Fatalf("a named backend unavailable: %v, want exit 5", err)
	}
}
