package bwrap_test

import (
	"context"
	"debug/elf"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/bwrap"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/servecmd"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestMain lets this test binary serve as the guest: the backend runs it inside the
// sandbox as /opt/paddock/bin/paddock, and that name makes it the paddock CLI.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "paddock" {
		os.Exit(servecmd.Main())
	}
	os.Exit(m.Run())
}

// newBackend returns a bwrap backend in a temporary directory and an installed guest,
// skipping only when bubblewrap cannot run here (CI installs it, so nothing skips there).
func newBackend(t testing.TB) (*bwrap.Bwrap, sandbox.GuestBinary) {
	t.Helper()
	return newBackendHiding(t, nil)
}

// newBackendHiding is newBackend with host paths its sandboxes must not see.
func newBackendHiding(t testing.TB, hide []string) (*bwrap.Bwrap, sandbox.GuestBinary) {
	t.Helper()
	dir := testenv.ShortTempDir(t)
	b, err := bwrap.New(backend.Env{Dir: filepath.Join(dir, "sb"), Hide: hide})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Available(context.Background()); err != nil {
		testenv.Missing(t, fmt.Sprintf("bwrap is not available (%v)", err), "apt-get install bubblewrap")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agent, err := sandbox.InstallGuest(self, filepath.Join(dir, "agent"))
	if err != nil {
		t.Fatal(err)
	}
	return b, agent
}

func TestConformance(t *testing.T) {
	b, agent := newBackend(t)
	backendtest.Run(t, backendtest.Harness{
		Backend: b,
		Spec: func(id backend.ID) backend.Spec {
			return backend.Spec{ID: id, Name: "conf-" + string(id), GuestBinary: agent.Path, GuestSHA256: agent.SHA256}
		},
		Leftovers: b.Leftovers,
		// Beside the backend's directory, where the daemon keeps its state and config.
		HostSecrets: []string{filepath.Join(filepath.Dir(filepath.Dir(agent.Path)), "state-secret")},
	})
}

// TestRootfs runs a sandbox on a root filesystem directory instead of the host's: a
// busybox one made here, which the sandbox must see in place of the host's /usr and /etc.
func TestRootfs(t *testing.T) {
	busybox := testenv.Program(t, "busybox", "apt-get install busybox-static")
	if !isStatic(t, busybox) {
		testenv.Missing(t, "busybox is not static", "apt-get install busybox-static")
	}
	self, _ := os.Executable()
	if !isStatic(t, self) {
		testenv.Missing(t, "the test binary is not static", "run with CGO_ENABLED=0 (make test does)")
	}
	b, agent := newBackend(t)
	rootfs := filepath.Join(testenv.ShortTempDir(t), "rootfs")
	for _, d := range []string{"bin", "etc", "usr/share/marker"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, applet := range []string{"sh", "cat", "ls", "id"} {
		if err := os.Symlink("busybox", filepath.Join(rootfs, "bin", applet)); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{"os-release": "ID=paddock-test-rootfs\n", "passwd": "", "group": ""} {
		if err := os.WriteFile(filepath.Join(rootfs, "etc", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ctx := context.Background()
	id := backend.ID("rootfs1")
	spec := backend.Spec{ID: id, Name: "rootfs", GuestBinary: agent.Path, GuestSHA256: agent.SHA256, Rootfs: rootfs}
	if err := b.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), id) })
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return b.Dial(ctx, id) }, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out strings.Builder
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", "cat /etc/os-release; ls /usr; id -u; ls /etc"}, Stdout: &out, Stderr: &out})
	if err != nil || code != 0 {
		t.Fatalf("exec: %d %v %s", code, err, out.String())
	}
	want := "ID=paddock-test-rootfs\nshare\n1000\ngroup\nos-release\npasswd\n"
	if out.String() != want {
		t.Fatalf("inside the rootfs sandbox:\n%s\nwant:\n%s", out.String(), want)
	}
}

func isStatic(t *testing.T, path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}
