package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/microvm"
	"github.com/paddockhq/paddock/internal/testenv"
)

// microvmImages is the microvm backend's image cache the scripts share with the
// backend's own tests: the kernel unpacked and the root file system made once (a
// minute), not once per script.
var microvmImages = filepath.Join(os.TempDir(), "paddock-microvm-test-images")

// microvmReady reports whether the microvm backend can run here: QEMU, a kernel and
// mke2fs, the sandbox image to make the root file system from, and root to make it.
// Under testenv.Strict (CI), it is taken as ready, so that a broken setup fails the
// script instead of skipping it; quick runs (go test -short) leave microVMs out.
func microvmReady() bool {
	if testing.Short() {
		return false
	}
	if testenv.Strict() {
		return true
	}
	b, err := microvm.New(backend.Env{Dir: os.TempDir()})
	if err != nil || b.Available(context.Background()) != nil {
		return false
	}
	return os.Geteuid() == 0 && exec.Command("docker", "image", "inspect", "paddock/sandbox:latest").Run() == nil
}

// microvmSetup readies the script's PADDOCK_HOME for microVMs: the small guest
// (cmd/paddock-guest, as `make build` makes it beside paddock) as guest_binary, since
// a VM's initramfs holds the guest whole, and the shared image cache as the backend's.
// It writes config.toml: microvmsetup.
func microvmSetup(ts *testscript.TestScript, neg bool, args []string) {
	smallGuestPath, err := testenv.SmallGuest()
	ts.Check(err)
	home := ts.Getenv("PADDOCK_HOME")
	ts.Check(linkMicroVMImages(home))
	cfg := fmt.Sprintf("guest_binary = %q\n", smallGuestPath)
	ts.Check(os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600))
}

// linkMicroVMImages makes the shared image cache the microvm backend's under home.
func linkMicroVMImages(home string) error {
	dir := filepath.Join(home, "sandboxes", microvm.Name)
	if err := os.MkdirAll(microvmImages, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	return os.Symlink(microvmImages, filepath.Join(dir, ".images"))
}

// shareMicroVMImages is linkMicroVMImages for a test.
func shareMicroVMImages(t *testing.T, home string) {
	if err := linkMicroVMImages(home); err != nil {
		t.Fatal(err)
	}
}
