package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/paddockhq/paddock/internal/backend"
)

// GuestBinary is a verified copy of the guest in the daemon's cache.
type GuestBinary struct {
	Path   string
	SHA256 string
}

// InstallGuest copies src into dir under a name made of its sha256, verifies the copy's
// sha256, and makes it read-only. An existing verified copy is reused.
func InstallGuest(src, dir string) (GuestBinary, error) {
	sum, err := backend.FileSHA256(src)
	if err != nil {
		return GuestBinary{}, fmt.Errorf("guest binary %s: %w", src, err)
	}
	dst := filepath.Join(dir, "paddock-"+sum[:16])
	if got, err := backend.FileSHA256(dst); err == nil && got == sum {
		return GuestBinary{Path: dst, SHA256: sum}, nil
	}
	// Searchable by others: as root, the sandbox's uid must reach the binary by path.
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return GuestBinary{}, err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return GuestBinary{}, err
	}
	tmp, err := os.CreateTemp(dir, ".guest-*")
	if err != nil {
		return GuestBinary{}, err
	}
	defer os.Remove(tmp.Name())
	in, err := os.Open(src)
	if err != nil {
		tmp.Close()
		return GuestBinary{}, err
	}
	_, err = io.Copy(tmp, in)
	in.Close()
	if err == nil {
		err = tmp.Chmod(0o555)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return GuestBinary{}, fmt.Errorf("copy guest binary: %w", err)
	}
	if got, err := backend.FileSHA256(tmp.Name()); err != nil || got != sum {
		return GuestBinary{}, fmt.Errorf("copy guest binary: the copy's sha256 %s differs from the source's %s", got, sum)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return GuestBinary{}, err
	}
	return GuestBinary{Path: dst, SHA256: sum}, nil
}
