package docker_test

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/docker"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/testenv"
)

// runscBackend is the docker backend with gVisor's runsc as its runtime. Without runsc
// registered with the engine the test is skipped, except under testenv.Strict (CI),
// where `make setup` registers it and the test must run.
func runscBackend(t *testing.T) (*docker.Docker, sandbox.GuestBinary) {
	t.Helper()
	b, err := docker.New(backend.Env{Dir: t.TempDir(), Options: map[string]any{"runtime": docker.Runsc}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err = b.Available(ctx)
	if err == nil {
		err = b.CheckRuntime(ctx, docker.Runsc, false)
	}
	if err != nil {
		if testenv.Strict() {
			t.Fatalf("docker with runsc must work here (make setup registers it): %v", err)
		}
		t.Skipf("docker with runsc is not available: %v", err)
	}
	agent := smallGuest(t)
	return b, agent
}

// TestConformanceRunsc runs the whole conformance suite on docker with gVisor.
func TestConformanceRunsc(t *testing.T) {
	b, agent := runscBackend(t)
	expect := b.Expect(context.Background(), "")
	backendtest.Run(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "gv-" + string(id), GuestBinary: agent.Path, GuestSHA256: agent.SHA256}
		},
		Leftovers:        b.Leftovers,
		LimitsEndSandbox: expect.LimitsEndSandbox,
		Allows:           expect.Allows,
	})
}

// TestRunscIsGVisor checks that a sandbox asked for with Runtime runsc really runs under
// gVisor: the engine records the runtime (with no-new-privileges and every capability
// dropped), and the kernel its processes see is gVisor's (its boot messages, and a
// release other than the host's).
func TestRunscIsGVisor(t *testing.T) {
	b, agent := runscBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := backend.ID("gvisor" + strings.ReplaceAll(time.Now().Format("150405.000"), ".", ""))
	// The backend's default runtime is runsc here: name it in the spec too, as `up
	// --runtime` does, and check the other way round below.
	if err := b.Create(ctx, backend.Spec{ID: id, Name: "gvisor", Runtime: docker.Runsc, GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), id) })
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	// gVisor's /proc reports no NoNewPrivs line, so the conformance suite cannot see it
	// from inside: the engine must at least have been asked for it, and for no capability.
	out, err := exec.Command("docker", "inspect", "-f", "{{.HostConfig.Runtime}} {{.HostConfig.SecurityOpt}} {{.HostConfig.CapDrop}}", "paddock-"+string(id)).CombinedOutput()
	if want := "runsc [no-new-privileges] [ALL]"; err != nil || strings.TrimSpace(string(out)) != want {
		t.Fatalf("docker inspect says %q (%v), want %q", out, err, want)
	}
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return b.Dial(ctx, id) }, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var stdout strings.Builder
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", "uname -r; dmesg"}, Stdout: &stdout, Stderr: &stdout})
	if err != nil || code != 0 {
		t.Fatalf("uname; dmesg: exit %d %v: %s", code, err, stdout.String())
	}
	docker.CheckLogBounded(t, b, c, id)
	inside := strings.SplitN(stdout.String(), "\n", 2)
	host, err := exec.Command("uname", "-r").Output()
	if err != nil {
		t.Fatal(err)
	}
	if inside[0] == strings.TrimSpace(string(host)) {
		t.Errorf("the sandbox sees the host's kernel %s", inside[0])
	}
	if !strings.Contains(stdout.String(), "Starting gVisor") {
		t.Errorf("dmesg inside shows no gVisor kernel:\n%s", stdout.String())
	}
}
