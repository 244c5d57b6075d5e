package diskimage

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCheckRefusesWithoutRoot runs Check in a process of an unprivileged user (this test
// binary, copied where that user can run it): it must refuse, saying root is needed and
// what to do instead, rather than let a sandbox be made whose disk limit is only claimed.
func TestCheckRefusesWithoutRoot(t *testing.T) {
	if os.Getenv("DISKIMAGE_CHILD") == "1" {
		err := Check()
		var ue *UnavailableError
		if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "root") || !strings.Contains(ue.Fix, "leave out --disk") {
			t.Fatalf("Check as uid %d: %v, want an UnavailableError saying root is needed", os.Geteuid(), err)
		}
		return
	}
	if os.Geteuid() != 0 {
		if err := Check(); err == nil {
			t.Fatal("Check passed for a process that is not root")
		}
		return
	}
	dir, err := os.MkdirTemp("", "diskimage")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "diskimage.test")
	copyFile(t, self, bin)
	cmd := exec.Command(bin, "-test.run=^TestCheckRefusesWithoutRoot$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DISKIMAGE_CHILD=1")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
