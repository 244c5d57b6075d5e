// Package hostdisk says how much of the host's disk what comes out of a sandbox may
// take: a copy or a sync stops before it fills the disk the host's other programs need.
package hostdisk

import "golang.org/x/sys/unix"

// Room is what may still be written into dir: the space free to unprivileged users on
// its filesystem, less a twentieth of it (at most 1 GiB) left free; 0 when that cannot be
// read (no bound).
func Room(dir string) int64 {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return 0
	}
	free := int64(fs.Bavail) * fs.Bsize
	return max(free-min(free/20, 1<<30), 1)
}
