// Package atomicfile writes a file whole or not at all, and durably: a reader sees the
// old contents or the new, never a part, and a crash right after Write returns keeps the
// new. For the daemon's secrets and records, where losing a write or half-writing one
// would lose what a user gave it.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to path with mode: to a temporary file in the same directory,
// synced, then renamed over path. The temporary file is created private (0600) and
// given mode only once written, so a secret is never readable by others meanwhile.
func Write(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
