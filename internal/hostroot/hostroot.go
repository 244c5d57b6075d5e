// Package hostroot tells the host's own root filesystem from a root filesystem made for
// a sandbox, for the config's check of a backend's rootfs, the backends' own, and the
// check of `up --rootfs` by the CLI and the daemon. It is a leaf: the config and the CLI
// use it without the backends.
package hostroot

import (
	"fmt"
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

// Check checks a directory to be used as a sandbox's root filesystem: it must be an
// absolute path to a directory, and not the host's own root however it is spelled (/,
// /., //, a symlink to /, a bind mount of /). The host's root as a rootfs would show the
// sandbox every file of the host (home directories, the daemon's state, the host's /etc)
// where it should see a filesystem of its own. `paddock up --rootfs` checks with it
// before it asks the daemon, and the daemon every request it is given.
func Check(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("rootfs %q is not an absolute path", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("rootfs %s: %w", path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("rootfs %s is not a directory", path)
	}
	if Is(path) {
		how := ""
		if filepath.Clean(path) != "/" {
			how = fmt.Sprintf(" (%s is the same directory)", path)
		}
		return fmt.Errorf("rootfs %s is the host's own root filesystem%s: a sandbox on it would see every file of the host, not a filesystem of its own", path, how)
	}
	return nil
}
