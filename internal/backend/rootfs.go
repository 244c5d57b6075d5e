package backend

import (
	"fmt"
	"os"
	"path/filepath"
)

// RootfsHint says what to give as a root filesystem in place of one CheckRootfs refuses.
const RootfsHint = "give a directory holding a Linux root filesystem of its own (for example one made with `mmdebstrap stable DIR`), " +
	"or none, and the sandbox sees only the host's /usr, /etc and the like, read-only"

// CheckRootfs checks a directory to be used as a sandbox's root filesystem (Spec.Rootfs):
// it must be an absolute path to a directory, and not the host's own root however it is
// spelled (/, /., //, a symlink to /, a bind mount of /). The host's root as a rootfs would
// show the sandbox every file of the host (home directories, the daemon's state, the
// host's /etc) where it should see a filesystem of its own.
func CheckRootfs(path string) error {
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
	if IsHostRoot(path) {
		how := ""
		if filepath.Clean(path) != "/" {
			how = fmt.Sprintf(" (%s is the same directory)", path)
		}
		return fmt.Errorf("rootfs %s is the host's own root filesystem%s: a sandbox on it would see every file of the host, not a filesystem of its own", path, how)
	}
	return nil
}

// IsHostRoot reports whether path, once symlinks are followed, is the host's root
// directory: "/" itself or the same directory under another name (a symlink, a bind mount).
func IsHostRoot(path string) bool {
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
