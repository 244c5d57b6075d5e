package microvm_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/microvm"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/testenv"
)

// guest builds the small guest (cmd/paddock-guest, as `make build` does) once per test
// binary: the VMs' /init and guest, which their initramfs holds.
func guest(tb testing.TB) string {
	tb.Helper()
	path, err := testenv.SmallGuest()
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// sharedImages is one image cache for the package's tests: the root file system is
// made once (a minute), the kernel unpacked once.
var sharedImages = filepath.Join(os.TempDir(), "paddock-microvm-test-images")

// newBackend is the backend with its directory under a test's, and the shared images.
// Quick runs (go test -short) skip the test, unless it drives the fake Firecracker: a VM
// under TCG is heavy.
func newBackend(tb testing.TB, opts map[string]any) *microvm.MicroVM {
	tb.Helper()
	if opts["vmm"] != "firecracker" {
		testenv.Heavy(tb, "a microVM")
	}
	testenv.Program(tb, "qemu-system-x86_64", "sudo apt-get install qemu-system-x86")
	dir := tb.TempDir()
	if err := os.MkdirAll(sharedImages, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.Symlink(sharedImages, filepath.Join(dir, ".images")); err != nil {
		tb.Fatal(err)
	}
	b, err := microvm.New(backend.Env{Dir: dir, Options: opts})
	if err != nil {
		tb.Fatal(err)
	}
	if err := b.Available(context.Background()); err != nil {
		testenv.Missing(tb, "the microvm backend", err.Error())
	}
	return b
}

// startSandbox makes and starts a sandbox of b with the small guest, destroyed when the
// test ends.
func startSandbox(t *testing.T, b backend.Backend, id backend.ID) {
	t.Helper()
	ctx := context.Background()
	if err := b.Create(ctx, spec(t, id)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), id) })
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// spec is a sandbox's spec with the small guest.
func spec(tb testing.TB, id backend.ID) backend.Spec {
	g := guest(tb)
	return backend.Spec{ID: id, Name: string(id), GuestBinary: g, Env: []string{"PADDOCK_TEST=1"}}
}

// connect is a client of the guest in sandbox id.
func connect(tb testing.TB, b backend.Backend, id backend.ID) *guestclient.Client {
	tb.Helper()
	c, err := guestclient.New(context.Background(), func(ctx context.Context) (net.Conn, error) { return b.Dial(ctx, id) }, "test")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}
