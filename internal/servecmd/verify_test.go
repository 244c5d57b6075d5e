package servecmd

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/conform"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestVerifyFailedCheck: a check that fails makes verify exit 6, naming the backend and
// the check, and the report shows it FAILED with what the check found.
func TestVerifyFailedCheck(t *testing.T) {
	t.Parallel()
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
	if err == nil || cli.ExitCode(err) != 6 || !strings.Contains(err.Error(), "bwrap: HostSecrets") || strings.Contains(err.Error(), "Exec") {
		t.Fatalf("verify's error = %v (exit %d), want exit 6 naming bwrap: HostSecrets alone", err, cli.ExitCode(err))
	}
	var out strings.Builder
	writeVerify(&out, r)
	for _, want := range []string{"\n  PASS            Exec\n", "\n  FAIL            HostSecrets\n      read the host's secret at /etc/x\n",
		"\nbwrap: FAILED: 1 passed, 1 failed, 0 not applicable, nothing left behind"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}

	// What a check saw in the sandbox reaches the terminal escaped: a failure's text,
	// a note and a path left behind that carry a terminal's escape sequences.
	esc := verifyReport{Backends: []backendVerify{{Name: "bwrap", Isolation: backend.IsolationNamespaces, Failed: 1,
		Checks:     []conform.Result{{Name: "Probe", Status: conform.Fail, Why: "saw \x1b]0;owned\x07 in /tmp", Notes: []string{"ran \x1b[2J"}}},
		LeftBehind: []string{"/tmp/\x1b[31mx"}}}}
	out.Reset()
	writeVerify(&out, esc)
	if strings.ContainsRune(out.String(), '\x1b') || strings.ContainsRune(out.String(), '\a') {
		t.Errorf("the report carries the sandbox's escape sequences raw: %q", out.String())
	}

	// What a destroyed sandbox left on the host fails verify too.
	r.Backends[0].Checks, r.Backends[0].Failed = results[:1], 0
	r.Backends[0].LeftBehind = []string{"mount /tmp/x"}
	if err := verifyOutcome(r, nil); cli.ExitCode(err) != 6 || !strings.Contains(err.Error(), "bwrap: left behind") {
		t.Fatalf("verify's error = %v, want exit 6 for what was left behind", err)
	}
	// A clean report exits 0; one with a named backend that cannot run here exits 5.
	r.Backends[0].LeftBehind = nil
	if err := verifyOutcome(r, nil); err != nil {
		t.Fatalf("a clean report: %v", err)
	}
	if err := verifyOutcome(r, []string{"docker"}); cli.ExitCode(err) != 5 {
		t.Fatalf("a named backend unavailable: %v, want exit 5", err)
	}
}

// TestVerifyDaemonKeyFound: with the daemon's key planted in a file of its sandbox,
// KeyNowhereInside fails naming the file, and verify exits 6 naming it. It stays serial:
// the private daemon it starts takes the API keys out of this process's environment
// while it runs, and reads the guest from PADDOCK_GUEST_BINARY there, as paddock does.
func TestVerifyDaemonKeyFound(t *testing.T) {
	testenv.Program(t, "bwrap", "make setup installs bubblewrap")
	guest, err := testenv.SmallGuest()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PADDOCK_GUEST_BINARY", guest)
	dir, err := os.MkdirTemp("", "pv")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o711)
	verifyDaemonHook = func(ctx context.Context, d *verifyDaemon) {
		if out, err := d.inside(ctx, `printf "token: %s\n" "$1$2" > /workspace/leak.txt`, d.key[:10], d.key[10:]); err != nil {
			t.Errorf("plant the key: %v %s", err, out)
		}
	}
	daemonSuiteOnly = 1 // KeyNowhereInside
	defer func() { verifyDaemonHook, daemonSuiteOnly = nil, 0 }()
	checks, err := daemonChecks(context.Background(), dir, "bwrap", func(conform.Result) {})
	if err != nil {
		t.Fatal(err)
	}
	key := checks[0]
	if key.Name != "KeyNowhereInside" || key.Status != conform.Fail || !strings.Contains(key.Why, "file /workspace/leak.txt") {
		t.Fatalf("KeyNowhereInside = %s %q, want FAIL naming /workspace/leak.txt", key.Status, key.Why)
	}
	r := verifyReport{Backends: []backendVerify{{Name: "bwrap", Passed: 1}}, Daemon: &daemonVerify{Backend: "bwrap", Checks: checks}}
	if err := verifyOutcome(r, nil); cli.ExitCode(err) != 6 || !strings.Contains(err.Error(), "daemon: KeyNowhereInside") {
		t.Fatalf("verify's error = %v, want exit 6 naming daemon: KeyNowhereInside", err)
	}
	var out strings.Builder
	writeVerify(&out, r)
	if !strings.Contains(out.String(), "\ndaemon: FAILED: ") {
		t.Errorf("the report does not say the daemon section FAILED:\n%s", out.String())
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		for _, e := range left {
			if e.Name() == "d" {
				if sb, _ := os.ReadDir(dir + "/d/sandboxes/bwrap"); len(sb) > 0 {
					t.Errorf("the private daemon left sandboxes: %v", sb)
				}
			}
		}
	}
}
