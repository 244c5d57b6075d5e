package guest

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// beneath is a directory that Files paths are resolved in: like os.Root, a path never
// leaves it, through ".." or through a symlink, and symlinks that stay inside are
// followed where os.Root follows them. The walk is its own because os.Root opens each
// directory on the way with O_NOFOLLOW|O_DIRECTORY, and gVisor's runsc builds of 2022
// (Debian's) follow a symlink given to openat with O_DIRECTORY even with O_NOFOLLOW: under
// them, os.Root walks out through any link. Here every component is opened with O_PATH
// and O_NOFOLLOW alone and checked with fstat, which those builds get right, and the
// last operation is a *at call on its parent's descriptor that does not follow a link.
type beneath struct {
	fd   int    // O_PATH descriptor of the directory
	name string // its path, for messages
}

// maxLinks bounds the symlinks one resolution follows, as the kernel's 40.
const maxLinks = 40

// maxRetries bounds how often an operation starts again when the final component turned
// into a symlink between its resolution and the operation (a race inside the sandbox).
const maxRetries = 8

// openBeneath opens dir (following links in dir itself: the daemon chose it).
func openBeneath(dir string) (*beneath, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return &beneath{fd: fd, name: dir}, nil
}

// Close releases the directory.
func (b *beneath) Close() error { return unix.Close(b.fd) }

// parent is the directory a path's last component is in, and that component.
type parent struct {
	fd    int
	last  string
	owned bool // fd is not the root's and must be closed
}

func (p parent) close() {
	if p.owned {
		unix.Close(p.fd)
	}
}

// walk resolves name (a slash path relative to b) to its parent directory and last
// component. Symlinks on the way are followed when they stay beneath b; the last
// component's when followFinal is set. With mkdir non-zero, missing directories are
// made on the way, the last one too (MkdirAll).
func (b *beneath) walk(name string, followFinal bool, mkdir fs.FileMode) (parent, error) {
	queue := splitPath(name)
	stack := []int{b.fd}
	release := func() {
		for _, fd := range stack[1:] {
			unix.Close(fd)
		}
	}
	links := 0
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		final := len(queue) == 0
		top := stack[len(stack)-1]
		switch c {
		case ".":
			if final {
				return b.keep(stack, "."), nil
			}
			continue
		case "..":
			if len(stack) == 1 {
				release()
				return parent{}, errPathEscapes
			}
			unix.Close(top)
			stack = stack[:len(stack)-1]
			if final {
				return b.keep(stack, "."), nil
			}
			continue
		}
		if final && !followFinal && mkdir == 0 {
			return b.keep(stack, c), nil
		}
		fd, err := unix.Openat(top, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && mkdir != 0 {
			if err = unix.Mkdirat(top, c, uint32(mkdir.Perm())); err == nil || errors.Is(err, unix.EEXIST) {
				fd, err = unix.Openat(top, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		if errors.Is(err, unix.ENOENT) && final {
			return b.keep(stack, c), nil // to be made by the caller
		}
		if err != nil {
			release()
			return parent{}, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			release()
			return parent{}, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, err := readlinkat(top, c)
			unix.Close(fd)
			if err != nil {
				release()
				return parent{}, err
			}
			if links++; links > maxLinks {
				release()
				return parent{}, unix.ELOOP
			}
			if strings.HasPrefix(target, "/") {
				release()
				return parent{}, errPathEscapes
			}
			queue = append(splitPath(target), queue...)
			continue
		case unix.S_IFDIR:
			if final && mkdir == 0 {
				unix.Close(fd)
				return b.keep(stack, c), nil
			}
			stack = append(stack, fd)
			if final {
				return b.keep(stack, "."), nil
			}
		default:
			unix.Close(fd)
			if final {
				if mkdir != 0 {
					release()
					return parent{}, unix.ENOTDIR
				}
				return b.keep(stack, c), nil
			}
			release()
			return parent{}, unix.ENOTDIR
		}
	}
	return b.keep(stack, "."), nil
}

// keep returns the top of stack as the parent of last and closes the rest.
func (b *beneath) keep(stack []int, last string) parent {
	top := stack[len(stack)-1]
	for i := 1; i < len(stack)-1; i++ {
		unix.Close(stack[i])
	}
	return parent{fd: top, last: last, owned: len(stack) > 1}
}

// splitPath splits a slash path into its components; an absolute path is taken as
// relative (callers pass paths relative to the root, as relPath makes them).
func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return []string{"."}
	}
	return out
}

func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Open opens name for reading, following a final symlink that stays beneath.
func (b *beneath) Open(name string) (*os.File, error) {
	return b.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile opens name as os.OpenFile does; with O_CREATE|O_EXCL a final symlink is
// never followed.
func (b *beneath) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	excl := flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL
	for range maxRetries {
		p, err := b.walk(name, !excl, 0)
		if err != nil {
			return nil, pathErr("openat", name, err)
		}
		fd, err := unix.Openat(p.fd, p.last, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		p.close()
		if errors.Is(err, unix.ELOOP) && !excl {
			continue // the last component became a link since the walk: resolve it again
		}
		if excl && errors.Is(err, unix.ELOOP) {
			err = unix.EEXIST
		}
		if err != nil {
			return nil, pathErr("openat", name, err)
		}
		return os.NewFile(uintptr(fd), path.Join(b.name, name)), nil
	}
	return nil, pathErr("openat", name, unix.ELOOP)
}

// OpenRoot opens the directory name as a new beneath.
func (b *beneath) OpenRoot(name string) (*beneath, error) {
	for range maxRetries {
		p, err := b.walk(name, true, 0)
		if err != nil {
			return nil, pathErr("openat", name, err)
		}
		fd, err := unix.Openat(p.fd, p.last, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		p.close()
		if err != nil {
			return nil, pathErr("openat", name, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, pathErr("openat", name, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			return &beneath{fd: fd, name: path.Join(b.name, name)}, nil
		case unix.S_IFLNK:
			unix.Close(fd)
			continue
		}
		unix.Close(fd)
		return nil, pathErr("openat", name, unix.ENOTDIR)
	}
	return nil, pathErr("openat", name, unix.ELOOP)
}

// Lstat describes name without following a final symlink.
func (b *beneath) Lstat(name string) (fs.FileInfo, error) {
	p, err := b.walk(name, false, 0)
	if err != nil {
		return nil, pathErr("lstat", name, err)
	}
	defer p.close()
	fd, err := unix.Openat(p.fd, p.last, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathErr("lstat", name, err)
	}
	f := os.NewFile(uintptr(fd), path.Base(name))
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, pathErr("lstat", name, err)
	}
	return fi, nil
}

// Readlink returns the target of the symlink name.
func (b *beneath) Readlink(name string) (string, error) {
	p, err := b.walk(name, false, 0)
	if err != nil {
		return "", pathErr("readlinkat", name, err)
	}
	defer p.close()
	target, err := readlinkat(p.fd, p.last)
	return target, pathErr("readlinkat", name, err)
}

// Symlink makes name a symlink to target.
func (b *beneath) Symlink(target, name string) error {
	p, err := b.walk(name, false, 0)
	if err != nil {
		return pathErr("symlinkat", name, err)
	}
	defer p.close()
	return pathErr("symlinkat", name, unix.Symlinkat(target, p.fd, p.last))
}

// Mkdir makes the directory name.
func (b *beneath) Mkdir(name string, perm fs.FileMode) error {
	p, err := b.walk(name, false, 0)
	if err != nil {
		return pathErr("mkdirat", name, err)
	}
	defer p.close()
	return pathErr("mkdirat", name, unix.Mkdirat(p.fd, p.last, uint32(perm.Perm())))
}

// MkdirAll makes name and the directories it needs, following links that stay beneath.
func (b *beneath) MkdirAll(name string, perm fs.FileMode) error {
	p, err := b.walk(name, true, perm|fs.ModeDir)
	if err != nil {
		return pathErr("mkdirat", name, err)
	}
	p.close()
	return nil
}

// Remove removes the file or empty directory name (a symlink itself, never its target).
func (b *beneath) Remove(name string) error {
	p, err := b.walk(name, false, 0)
	if err != nil {
		return pathErr("remove", name, err)
	}
	defer p.close()
	err = unix.Unlinkat(p.fd, p.last, 0)
	if err == nil {
		return nil
	}
	derr := unix.Unlinkat(p.fd, p.last, unix.AT_REMOVEDIR)
	if derr == nil {
		return nil
	}
	if !errors.Is(derr, unix.ENOTDIR) {
		err = derr
	}
	return pathErr("remove", name, err)
}

// RemoveAll removes name and everything beneath it, never following a link; a missing
// name is no error.
func (b *beneath) RemoveAll(name string) error {
	p, err := b.walk(name, false, 0)
	if err != nil {
		return pathErr("removeall", name, err)
	}
	defer p.close()
	if p.last == "." || p.last == ".." {
		return pathErr("removeall", name, unix.EINVAL)
	}
	return pathErr("removeall", name, removeAllAt(p.fd, p.last))
}

func removeAllAt(dirfd int, name string) error {
	for range maxRetries {
		err := unix.Unlinkat(dirfd, name, 0)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
			return err
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ELOOP) {
			continue // now a link: unlink it
		}
		if err != nil {
			return err
		}
		dir := os.NewFile(uintptr(fd), name)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			dir.Close()
			continue
		}
		var firstErr error
		for {
			names, rerr := dir.Readdirnames(256)
			for _, n := range names {
				if err := removeAllAt(fd, n); err != nil && firstErr == nil {
					firstErr = err
				}
			}
			if rerr != nil {
				break
			}
		}
		dir.Close()
		if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
			if firstErr != nil {
				return firstErr
			}
			return err
		}
		return nil
	}
	return unix.ELOOP
}

// Rename moves oldname to newname, neither followed if a symlink.
func (b *beneath) Rename(oldname, newname string) error {
	_, err := b.rename(oldname, newname, false)
	return err
}

// RenameHolding is Rename, returning what newname named before, held open (O_PATH), or
// nil when it named nothing. The last reference to a replaced file frees its blocks,
// which takes tens of milliseconds for a file of tens of megabytes: held, that happens
// when the caller closes it, not in the rename.
func (b *beneath) RenameHolding(oldname, newname string) (*os.File, error) {
	return b.rename(oldname, newname, true)
}

func (b *beneath) rename(oldname, newname string, hold bool) (*os.File, error) {
	op, err := b.walk(oldname, false, 0)
	if err != nil {
		return nil, pathErr("renameat", oldname, err)
	}
	defer op.close()
	np, err := b.walk(newname, false, 0)
	if err != nil {
		return nil, pathErr("renameat", newname, err)
	}
	defer np.close()
	var held *os.File
	if hold {
		if fd, err := unix.Openat(np.fd, np.last, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			held = os.NewFile(uintptr(fd), path.Join(b.name, newname))
		}
	}
	if err := unix.Renameat(op.fd, op.last, np.fd, np.last); err != nil {
		if held != nil {
			held.Close()
		}
		return nil, pathErr("renameat", newname, err)
	}
	return held, nil
}

// Chmod sets name's mode, following a final symlink that stays beneath.
func (b *beneath) Chmod(name string, mode fs.FileMode) error {
	for range maxRetries {
		p, err := b.walk(name, true, 0)
		if err != nil {
			return pathErr("chmod", name, err)
		}
		fd, err := unix.Openat(p.fd, p.last, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		p.close()
		if err != nil {
			return pathErr("chmod", name, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			continue
		}
		// An O_PATH descriptor takes no fchmod; its /proc link names exactly the file
		// checked above, whatever happens to the name meanwhile.
		err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), uint32(osMode(mode)))
		unix.Close(fd)
		return pathErr("chmod", name, err)
	}
	return pathErr("chmod", name, unix.ELOOP)
}

// Chtimes sets name's access and modification times, following a final symlink that
// stays beneath.
func (b *beneath) Chtimes(name string, atime, mtime time.Time) error {
	p, err := b.walk(name, true, 0)
	if err != nil {
		return pathErr("chtimes", name, err)
	}
	defer p.close()
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	return pathErr("chtimes", name, unix.UtimesNanoAt(p.fd, p.last, ts, unix.AT_SYMLINK_NOFOLLOW))
}

// osMode is mode's permission and setuid/setgid/sticky bits in the kernel's encoding.
func osMode(mode fs.FileMode) uint32 {
	m := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	if mode&fs.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if mode&fs.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return m
}
