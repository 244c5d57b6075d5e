package backend

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/paddockhq/paddock/internal/hostroot"
)

// RootfsHint says what to give as a root filesystem in place of one CheckRootfs refuses.
const RootfsHint = hostroot.Hint

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
	if hostroot.Is(path) {
		how := ""
		if filepath.Clean(path) != "/" {
			how = fmt.Sprintf(" (%s is the same directory)", path)
		}
		return fmt.Errorf("rootfs %s is the host's own root filesystem%s: a sandbox on it would see every file of the host, not a filesystem of its own", path, how)
	}
	return nil
}
