package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
)

func TestInstallGuestVerifiesAndReplacesACorruptCopy(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "paddock")
	os.WriteFile(src, []byte("guest binary v1"), 0o755)
	a, err := InstallGuest(src, filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := backend.FileSHA256(a.Path); got != a.SHA256 {
		t.Fatalf("installed copy has sha256 %s, want %s", got, a.SHA256)
	}
	if fi, _ := os.Stat(a.Path); fi.Mode().Perm() != 0o555 {
		t.Fatalf("installed copy mode %v, want read-only 0555", fi.Mode())
	}
	// A cached copy that no longer matches its name is replaced, not trusted.
	os.Chmod(a.Path, 0o755)
	os.WriteFile(a.Path, []byte("tampered"), 0o755)
	b, err := InstallGuest(src, filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := backend.FileSHA256(b.Path); got != a.SHA256 {
		t.Fatal("a tampered cached guest was reused")
	}
}
