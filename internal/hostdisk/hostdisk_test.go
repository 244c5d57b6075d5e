package hostdisk

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRoom: on a 64 MiB filesystem a twentieth stays free; on a 40 GiB one, 1 GiB; a
// directory that cannot be read has no bound.
func TestRoom(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting filesystems of known sizes needs root")
	}
	for _, c := range []struct {
		size string
		want int64
	}{
		{"64m", 64<<20 - (64<<20)/20},
		{"40g", 40<<30 - 1<<30}, // tmpfs takes no memory until written
	} {
		dir := t.TempDir()
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+c.size); err != nil {
			t.Skipf("mount a tmpfs: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
		if got := Room(dir); got != c.want {
			t.Errorf("Room of an empty %s filesystem = %d, want %d", c.size, got, c.want)
		}
	}
	if got := Room(filepath.Join(t.TempDir(), "missing")); got != 0 {
		t.Errorf("Room of a missing directory = %d, want 0 (no bound)", got)
	}
}
