// Package diskimage bounds a sandbox's workspace on the host's disk: a sparse file of
// the bound's size, formatted ext4 and loop-mounted (nosuid, nodev) at the workspace
// directory. What the sandbox writes there can never take more of the host's filesystem
// than the file's size; a write past it fails inside the sandbox with "no space left on
// device". It needs root (mount, loop devices) and mkfs.ext4 (e2fsprogs).
package diskimage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/backend"
)

// MinBytes is the smallest bound a workspace may be given: below it ext4's own
// structures leave too little room for a checkout.
const MinBytes = wire.MinDiskBytes

// UnavailableError says why workspaces cannot be bounded on this host, and what would
// allow it.
type UnavailableError struct {
	Reason string
	Fix    string
}

func (e *UnavailableError) Error() string {
	return "a disk limit cannot be set here: " + e.Reason
}

// Check says whether this host can bound a workspace: the process is root, mkfs.ext4 is
// installed and the kernel has loop devices. A nil error means Make will be tried.
func Check() error {
	if os.Geteuid() != 0 {
		return &UnavailableError{Reason: "the daemon does not run as root, and only root can loop-mount a workspace's disk image",
			Fix: "run the daemon as root (sudo paddock serve), or leave out --disk"}
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		return &UnavailableError{Reason: "mkfs.ext4 is not installed", Fix: "install e2fsprogs (apt-get install e2fsprogs), or leave out --disk"}
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return &UnavailableError{Reason: "the kernel has no loop devices (/dev/loop-control is missing)",
			Fix: "load the loop module (modprobe loop), or leave out --disk"}
	}
	return nil
}

// Make creates image, a sparse file of size bytes formatted ext4 whose root directory
// belongs to uid:gid (mode 0700), and mounts it at dir. dir itself is made root's with
// mode 0000 first, so that a sandbox started on it while the image is not mounted (the
// engine restarting a container on its own) cannot write to the host's filesystem.
func Make(ctx context.Context, image, dir string, size int64, uid, gid int) error {
	if size < MinBytes {
		return fmt.Errorf("a disk limit must be at least %d MiB, not %d bytes", MinBytes>>20, size)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chown(dir, 0, 0); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0); err != nil {
		return err
	}
	f, err := os.OpenFile(image, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("the workspace's disk image: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(image)
		return fmt.Errorf("the workspace's disk image: %w", err)
	}
	// No blocks kept for root (-m 0): the bound is the same whoever writes. nodiscard:
	// the file is sparse already.
	owner := fmt.Sprintf("root_owner=%d:%d", uid, gid)
	out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", "-L", "workspace", "-E", "nodiscard,"+owner, image).CombinedOutput()
	if err != nil {
		os.Remove(image)
		return fmt.Errorf("format the workspace's disk image: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if _, err := Mount(ctx, image, dir); err != nil {
		os.Remove(image)
		return err
	}
	// lost+found is root's and would sit in every workspace: e2fsck makes it again if
	// it ever needs it.
	os.Remove(filepath.Join(dir, "lost+found"))
	return os.Chmod(dir, 0o700) // the image's root, now mounted there
}

// Mount mounts image at dir (nosuid, nodev) unless it is mounted there already, and
// says whether it mounted it. util-linux's mount takes a loop device that goes away with
// the unmount. noinit_itable: the kernel does not zero the inode tables in the
// background, which would allocate them in the sparse file (about 1.5% of its size);
// they read as zeros already.
func Mount(ctx context.Context, image, dir string) (bool, error) {
	if mountedAt(image, dir) {
		return false, nil
	}
	out, err := exec.CommandContext(ctx, "mount", "-t", "ext4", "-o", "loop,nosuid,nodev,noinit_itable", image, dir).CombinedOutput()
	if err != nil {
		return false, fmt.Errorf("mount the workspace's disk image %s: %v: %s", image, err, strings.TrimSpace(string(out)))
	}
	return true, nil
}

// Remove unmounts dir, if image is mounted there, and deletes image. A missing image
// is no error.
func Remove(image, dir string) error {
	for mountedAt(image, dir) {
		if err := unix.Unmount(dir, 0); err != nil {
			if !errors.Is(err, unix.EBUSY) {
				return fmt.Errorf("unmount the workspace %s: %w", dir, err)
			}
			// A process still holds it (one of the sandbox's being reaped): detach it,
			// and the loop device goes when the last one lets go.
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount the workspace %s: %w", dir, err)
			}
		}
	}
	if err := os.Remove(image); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the workspace's disk image: %w", err)
	}
	return nil
}

// Exists says whether the workspace has a disk image: it was made with a disk limit.
func Exists(image string) bool {
	_, err := os.Lstat(image)
	return err == nil
}

// Remount mounts a workspace's image at dir again, if it was made with one (the mount
// is gone after a reboot of the host); a workspace without one is left as it is.
func Remount(ctx context.Context, image, dir string) error {
	if !Exists(image) {
		return nil
	}
	_, err := Mount(ctx, image, dir)
	return err
}

// Limit reads back a workspace's disk limit from its mount: zero for one made without an
// image, an error for one whose image is not mounted at dir.
func Limit(image, dir string) (int64, error) {
	if !Exists(image) {
		return 0, nil
	}
	if n := Size(image, dir); n > 0 {
		return n, nil
	}
	return 0, &backend.LimitsNotEnforcedError{Reason: "the workspace's disk image is not mounted", Fix: "stop the sandbox and start it again"}
}

// Size is the disk limit in force on dir, read back from the mount: the size of image
// when it is what is mounted at dir, else 0.
func Size(image, dir string) int64 {
	if !mountedAt(image, dir) {
		return 0
	}
	fi, err := os.Stat(image)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// mountedAt says whether the last mount at dir is a loop device backed by image. Both
// are paddock's own paths, resolved as the kernel shows them.
func mountedAt(image, dir string) bool {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	if r, err := filepath.EvalSymlinks(image); err == nil {
		image = r
	}
	dev := ""
	for _, m := range mounts() {
		if m.point == dir {
			dev = m.source
		}
	}
	return dev != "" && backingFile(dev) == image
}

// Leftovers lists what a workspace's disk leaves on the host when it is not cleaned up:
// mounts at or under root and loop devices whose file is under it.
func Leftovers(root string) []string {
	var out []string
	prefix := strings.TrimSuffix(root, "/") + "/"
	for _, m := range mounts() {
		if m.point == root || strings.HasPrefix(m.point, prefix) {
			out = append(out, "mount "+m.point)
		}
	}
	loops, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, p := range loops {
		data, _ := os.ReadFile(p)
		if f := strings.TrimSpace(string(data)); strings.HasPrefix(f, prefix) {
			out = append(out, "loop device /dev/"+filepath.Base(filepath.Dir(filepath.Dir(p)))+" on "+f)
		}
	}
	return out
}

// backingFile is the file behind a loop device (/dev/loopN), "" for any other source.
func backingFile(dev string) string {
	name := strings.TrimPrefix(dev, "/dev/")
	if !strings.HasPrefix(name, "loop") {
		return ""
	}
	data, err := os.ReadFile("/sys/block/" + name + "/loop/backing_file")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

type mount struct{ point, source string }

// mounts reads this process's mount table, in order.
func mounts() []mount {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []mount
	for _, line := range strings.Split(string(data), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(postFields) < 2 {
			continue
		}
		out = append(out, mount{point: backend.UnescapeMountinfo(fields[4]), source: backend.UnescapeMountinfo(postFields[1])})
	}
	return out
}

// FixText is what would allow a disk limit here.
func (e *UnavailableError) FixText() string { return e.Fix }
