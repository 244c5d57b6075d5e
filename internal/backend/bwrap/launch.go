package bwrap

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/inside"
)

// How a sandbox is launched: bwrap's options, which it reads from a descriptor, the
// seccomp filter, and the masks over what the host must keep to itself.

// The descriptors bwrap inherits, in the order of cmd.ExtraFiles.
const (
	fdListener = 3 // the agent's listener, passed on to the agent
	fdInfo     = 4 // bwrap writes the sandbox init's pid here
	fdArgs     = 5 // bwrap's options, NUL-separated
	fdSeccomp  = 6 // the seccomp filter
)

// launchFiles are the descriptors bwrap reads at start beyond the listener and the info
// pipe: its options (fdArgs) and the seccomp filter (fdSeccomp), each in a memfd, which
// bwrap reads from its start and closes.
func (b *Bwrap) launchFiles(spec backend.Spec, p paths) ([]*os.File, error) {
	args, err := b.args(spec, p)
	if err != nil {
		return nil, err
	}
	var data []byte
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			// Not quoted: it may be an environment value, a secret.
			return nil, errors.New("a path or environment value of the sandbox holds a NUL byte")
		}
		data = append(append(data, a...), 0)
	}
	argsFile, err := memfd("bwrap-args", data)
	if err != nil {
		return nil, err
	}
	if b.noSeccomp {
		return []*os.File{argsFile}, nil
	}
	if b.filterErr != nil {
		argsFile.Close()
		return nil, b.filterErr
	}
	filter, err := memfd("bwrap-seccomp", b.filter)
	if err != nil {
		argsFile.Close()
		return nil, err
	}
	return []*os.File{argsFile, filter}, nil
}

// memfd returns an anonymous file holding data, positioned at its start.
func memfd(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd for %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// hostDirs are the host directories a sandbox sees read-only when there is no rootfs.
var hostDirs = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc"}

// rootfsSkip are top-level rootfs entries the sandbox gets fresh instead.
var rootfsSkip = map[string]bool{"proc": true, "dev": true, "sys": true, "tmp": true, "home": true,
	"root": true, "run": true, "workspace": true, "opt": true, "mnt": true, "media": true, "lost+found": true}

// args are bwrap's options for a sandbox: its namespaces, environment, mounts and filter.
func (b *Bwrap) args(spec backend.Spec, p paths) ([]string, error) {
	a := []string{"--unshare-all"}
	if spec.OpenNetwork {
		// Everything --unshare-all does but the network namespace.
		a = []string{"--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"}
	}
	// --cap-drop ALL empties the bounding set too, so that nothing run inside can ever
	// hold a capability, whatever file capabilities it carries.
	a = append(a, "--unshare-user", "--uid", "1000", "--gid", "1000", "--disable-userns", "--cap-drop", "ALL",
		"--new-session", "--hostname", spec.Name, "--clearenv", "--as-pid-1")
	for _, kv := range append(backend.BaseEnv(spec), spec.Env...) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("sandbox env entry %q is not KEY=VALUE", kv)
		}
		a = append(a, "--setenv", k, v)
	}
	base, dirs := "/", hostDirs
	if spec.Rootfs != "" {
		base = spec.Rootfs
		entries, err := os.ReadDir(spec.Rootfs)
		if err != nil {
			return nil, fmt.Errorf("read rootfs: %w", err)
		}
		dirs = nil
		for _, e := range entries {
			if !rootfsSkip[e.Name()] {
				dirs = append(dirs, e.Name())
			}
		}
	}
	var shown []string // host directories bound inside, at /NAME
	for _, d := range dirs {
		src := filepath.Join(base, d)
		fi, err := os.Lstat(src)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			if err != nil {
				return nil, err
			}
			a = append(a, "--symlink", target, "/"+d)
			continue
		}
		a = append(a, "--ro-bind", src, "/"+d)
		shown = append(shown, d)
	}
	for _, f := range []string{"passwd", "group", "hostname", "hosts", "machine-id"} {
		if spec.Rootfs != "" || f == "machine-id" {
			// A read-only /etc cannot take a new mount point: cover only what exists.
			if _, err := os.Lstat(filepath.Join(base, "etc", f)); err != nil {
				continue
			}
		}
		if _, err := os.Lstat(filepath.Join(p.etc(), f)); err != nil && f == "machine-id" {
			continue // made before sandboxes had a machine id of their own
		}
		a = append(a, "--ro-bind", filepath.Join(p.etc(), f), "/etc/"+f)
	}
	a = append(a, b.maskArgs(base, shown)...)
	// The sandbox's own sysctls (those of its ipc, pid, uts and network namespaces) are
	// owned by its user: the host's /proc/sys bound over the new one, read-only, shows the
	// same namespaced values and refuses every write.
	a = append(a,
		"--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys")
	a = append(a, b.mountArgs(spec)...)
	a = append(a,
		"--bind", p.workspace(), inside.Workspace, "--bind", p.home(), inside.Home,
		"--ro-bind", spec.GuestBinary, guestPath,
	)
	a = append(a, b.rootArgs()...)
	if !b.noSeccomp {
		a = append(a, "--seccomp", strconv.Itoa(fdSeccomp))
	}
	a = append(a, "--chdir", inside.Workspace, "--info-fd", strconv.Itoa(fdInfo))
	return a, nil
}

// agentCommand is the sandbox's first process: the guest's ns-init, process 1 of the
// sandbox (--as-pid-1, in place of bwrap's own init, which the sandbox's user could
// trace and stop), reaping orphans, and under it the guest. bwrap takes it on its
// command line only, after the options it reads from fdArgs: it holds no secret.
func agentCommand(spec backend.Spec) []string {
	return []string{guestPath, inside.GuestCommand, "ns-init", "--",
		guestPath, inside.GuestCommand, "serve", "--listen-fd", strconv.Itoa(fdListener), "--sandbox", spec.Name}
}

// maskArgs hide, in a sandbox, the host paths it must not read (b.hide: paddock's own
// configuration) that lie beneath a host directory bound inside (base/NAME at /NAME, for
// each NAME of shown): a directory under an empty read-only tmpfs, a file under
// /dev/null (which, bound without device access, does not even open). Paths are compared once symlinks are resolved, so a path reached through a
// link is masked too; one that does not exist has nothing to show.
func (b *Bwrap) maskArgs(base string, shown []string) []string {
	var a []string
	for _, h := range b.hide {
		real, err := filepath.EvalSymlinks(h)
		if err != nil {
			continue
		}
		fi, err := os.Stat(real)
		if err != nil {
			continue
		}
		for _, d := range shown {
			src, err := filepath.EvalSymlinks(filepath.Join(base, d))
			if err != nil {
				continue
			}
			rel, err := filepath.Rel(src, real)
			if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
				continue
			}
			inside := "/" + d + "/" + rel
			if fi.IsDir() {
				a = append(a, "--tmpfs", inside, "--remount-ro", inside)
			} else {
				a = append(a, "--ro-bind", "/dev/null", inside)
			}
		}
	}
	return a
}
