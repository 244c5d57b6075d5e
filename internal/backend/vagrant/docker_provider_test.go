package vagrant_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/vagrant"
	"github.com/paddockhq/paddock/internal/backend/vagrant/vagranttest"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/servecmd"
)

// TestMain lets this test binary serve as the guest inside machines, and as the fake
// vagrant (fake_vagrant_test.go).
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "paddock":
		os.Exit(servecmd.Main())
	case "vagrant":
		os.Exit(fakeVagrant(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// connect is a client of the guest in machine id.
func connect(tb testing.TB, b *vagrant.Vagrant, id backend.ID) *guestclient.Client {
	tb.Helper()
	c, err := guestclient.New(context.Background(), func(ctx context.Context) (net.Conn, error) { return b.Dial(ctx, id) }, "test")
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func guestBinary(t testing.TB) sandbox.GuestBinary {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agent, err := sandbox.InstallGuest(self, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return agent
}

// TestDockerProviderLifecycle: a sandbox on real Vagrant with its docker provider comes
// up, runs a command through the guest over SSH as agent with sudo and the [vagrant] env,
// halts to stopped (the provider cannot suspend), comes up again with its files, and is
// destroyed to nothing.
func TestDockerProviderLifecycle(t *testing.T) {
	opts := vagranttest.DockerProvider(t)
	opts["env"] = map[string]any{"PROJECT_MODE": "it's a \"vm\""}
	b, err := vagrant.New(backend.Env{Dir: t.TempDir(), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	agent := guestBinary(t)
	ctx := context.Background()
	id := backend.ID("lc" + strings.ToLower(fmt.Sprint(os.Getpid()%10000)))
	if err := b.Create(ctx, backend.Spec{ID: id, Name: "life", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), id); b.WaitRemovals() })
	state := func(want backend.State) {
		t.Helper()
		st, err := b.State(ctx, id)
		if err != nil || st.State != want {
			t.Fatalf("State = %+v %v, want %s", st, err, want)
		}
	}
	state(backend.StateCreated)
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	state(backend.StateRunning)
	inside := func(script string) string {
		t.Helper()
		c := connect(t, b, id)
		defer c.Close()
		var out, errOut strings.Builder
		code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", script}, Stdout: &out, Stderr: &errOut})
		if err != nil || code != 0 {
			t.Fatalf("%s: %d %v %s", script, code, err, errOut.String())
		}
		return out.String()
	}
	if got := inside(`echo "$PROJECT_MODE"; id -un; sudo -n id -un; pwd; echo kept > /workspace/f`); got != "it's a \"vm\"\nagent\nroot\n/workspace\n" {
		t.Errorf("inside the machine: %q", got)
	}
	if err := b.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	state(backend.StateStopped)
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := inside("cat /workspace/f"); got != "kept\n" {
		t.Errorf("after halt and up: %q", got)
	}
	if err := b.Destroy(ctx, id); err != nil {
		t.Fatal(err)
	}
	state(backend.StateMissing)
	b.WaitRemovals()
	if out, _ := exec.Command("docker", "ps", "-a", "--filter", "name="+string(id)+"_", "--format", "{{.Names}}").Output(); len(out) > 0 {
		t.Errorf("the machine outlived its removal: %s", out)
	}
}

// TestConformance runs the backend conformance suite on real Vagrant with its docker
// provider.
func TestConformance(t *testing.T) {
	opts := vagranttest.DockerProvider(t)
	dir := t.TempDir()
	b, err := vagrant.New(backend.Env{Dir: dir, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	agent := guestBinary(t)
	t.Cleanup(b.WaitRemovals) // before the directory goes: machines are destroyed in the background
	backendtest.Run(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "conf-" + string(id), GuestBinary: agent.Path, GuestSHA256: agent.SHA256}
		},
		Dir: dir,
		Leftovers: func(id backend.ID) []string {
			b.WaitRemovals() // machines are destroyed in the background
			out, _ := exec.Command("docker", "ps", "-a", "--filter", "name="+string(id)+"_", "--format", "{{.Names}}").Output()
			return strings.Fields(string(out))
		},
		Machine: b.Expect(context.Background(), "").Machine,
	})
}
