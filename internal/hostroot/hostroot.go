// Package hostroot tells the host's own root filesystem from a root filesystem made for
// a sandbox, for the config's check of a backend's rootfs and the backends' own. It is a
// leaf: the config uses it without the backends.
package hostroot

import (
	"os"
	"path/filepath"
)

// Hint says what to give as a root filesystem in place of the host's own.
const Hint = "give a directory holding a Linux root filesystem of its own (for example one made with `mmdebstrap stable DIR`), " +
	"or none, and the sandbox sees only the host's /usr, /etc and the like, read-only"

// Is reports whether path, once symlinks are followed, is the host's root directory:
// "/" itself or the same directory under another name (a symlink, a bind mount).
func Is(path string) bool {
	if resolved, err := filepath.EvalSymlinks(path); err == nil && resolved == "/" {
		return true
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	root, err := os.Stat("/")
	return err == nil && os.SameFile(fi, root)
}
