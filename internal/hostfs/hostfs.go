// Package hostfs writes paths that came from a sandbox beneath a host directory without
// ever following a symlink.
//
// A sandbox chooses the names in what it sends out (tar entries, file lists), and it may
// have planted symlinks on an earlier transfer. Resolving such a name with ordinary path
// calls, or even within an os.Root (which follows links that stay inside the root),
// lets a link in the destination lead a write into .git/hooks or anywhere else. Here
// every component is opened relative to its parent's descriptor with O_NOFOLLOW, so a
// symlink or a file where a directory is needed stops the operation with a *LinkError,
// and a rename swapping a directory for a link half-way cannot redirect it: each step
// holds the directory it already checked. Symlinks can still be created (kept as links,
// as git does), but nothing is ever written beneath one.
//
// The destination directory itself is the user's choice and is opened normally.
package hostfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is an open destination directory. Its methods take slash-separated paths
// relative to it; each is resolved afresh, component by component, never through a link.
type Dir struct {
	path string // for messages
	fd   int    // O_PATH descriptor of the directory
}

// LinkError says a path cannot be used because one of its components on the host is a
// symlink or not a directory. Path is the full host path of that component.
type LinkError struct {
	Path string
	// Target is the link's target when the component is a symlink; empty otherwise.
	Target string
}

func (e *LinkError) Error() string {
	if e.Target != "" {
		return fmt.Sprintf("%s is a symlink to %s on the host: paddock never writes through a link", e.Path, e.Target)
	}
	return fmt.Sprintf("%s is not a directory on the host", e.Path)
}

// ErrUnsafeName is returned for a path that is absolute, empty or holds a ".."
// component.
var ErrUnsafeName = errors.New("not a path beneath the destination")

// Open opens the directory dir.
func Open(dir string) (*Dir, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return &Dir{path: dir, fd: fd}, nil
}

// Close releases the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Path is the directory's host path, as given to Open.
func (d *Dir) Path() string { return d.path }

// Split checks a relative name and returns its components; "." gives none.
func Split(name string) ([]string, error) {
	if name == "" || path.IsAbs(name) || strings.ContainsRune(name, 0) {
		return nil, fmt.Errorf("%q: %w", name, ErrUnsafeName)
	}
	// ".." is refused anywhere, not cleaned away: "dist/../.git/hooks/x" names a
	// place outside what was asked for, even when it stays beneath the destination.
	var parts []string
	for _, p := range strings.Split(name, "/") {
		switch p {
		case "..":
			return nil, fmt.Errorf("%q: %w", name, ErrUnsafeName)
		case "", ".":
		default:
			parts = append(parts, p)
		}
	}
	return parts, nil
}

func (d *Dir) join(parts []string) string {
	return filepath.Join(append([]string{d.path}, parts...)...)
}

// openDir opens the directory made of parts beneath d, never through a link. With
// create, missing directories are made with perm. The caller closes the descriptor.
func (d *Dir) openDir(parts []string, create bool, perm fs.FileMode) (int, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	for i, c := range parts {
		next, err := openChild(fd, c)
		if errors.Is(err, unix.ENOENT) && create {
			if err := unix.Mkdirat(fd, c, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, &fs.PathError{Op: "mkdir", Path: d.join(parts[:i+1]), Err: err}
			}
			next, err = openChild(fd, c)
		}
		if err != nil {
			err = d.explain(fd, c, parts[:i+1], err)
			unix.Close(fd)
			return -1, err
		}
		unix.Close(fd)
		fd = next
	}
	return fd, nil
}

// openChild opens the directory name beneath dirfd without following a link, and
// checks that what it opened is a directory.
func openChild(dirfd int, name string) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return -1, unix.ENOTDIR
	}
	return fd, nil
}

// explain turns a failure to open a directory component into a *LinkError when the
// component is a link or a file.
func (d *Dir) explain(parent int, name string, parts []string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		le := &LinkError{Path: d.join(parts)}
		var st unix.Stat_t
		if unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			le.Target = readlinkat(parent, name)
		}
		return le
	}
	return &fs.PathError{Op: "open", Path: d.join(parts), Err: err}
}

func readlinkat(dirfd int, name string) string {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "?"
	}
	return string(buf[:n])
}

// parent resolves name's parent directory (made when create is set) and returns its
// descriptor with name's last component.
func (d *Dir) parent(name string, create bool) (int, string, []string, error) {
	parts, err := Split(name)
	if err != nil {
		return -1, "", nil, err
	}
	if len(parts) == 0 {
		return -1, "", nil, fmt.Errorf("%q: %w", name, ErrUnsafeName)
	}
	fd, err := d.openDir(parts[:len(parts)-1], create, 0o755)
	if err != nil {
		return -1, "", nil, err
	}
	return fd, parts[len(parts)-1], parts, nil
}

// MkdirAll makes the directory name and any missing parents with perm. A link or a
// file anywhere on the way is a *LinkError.
func (d *Dir) MkdirAll(name string, perm fs.FileMode) error {
	parts, err := Split(name)
	if err != nil {
		return err
	}
	fd, err := d.openDir(parts, true, perm)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// ChmodDir sets the mode of the directory name; it must keep the owner's read and
// search bits, so it can be reopened.
func (d *Dir) ChmodDir(name string, mode fs.FileMode) error {
	parts, err := Split(name)
	if err != nil {
		return err
	}
	pfd, err := d.openDir(parts, false, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	// An O_PATH descriptor cannot fchmod: reopen the checked directory itself.
	fd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "chmod", Path: d.join(parts), Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, uint32(mode.Perm())); err != nil {
		return &fs.PathError{Op: "chmod", Path: d.join(parts), Err: err}
	}
	return nil
}

// Lstat describes name without following it or any link on the way. A missing name is
// an error that matches fs.ErrNotExist; a link or file where a parent directory should
// be is a *LinkError.
func (d *Dir) Lstat(name string) (Entry, error) {
	fd, base, parts, err := d.parent(name, false)
	if err != nil {
		return Entry{}, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Entry{}, &fs.PathError{Op: "lstat", Path: d.join(parts), Err: err}
	}
	e := Entry{Path: d.join(parts), Mode: fileMode(st.Mode)}
	if e.Mode&fs.ModeSymlink != 0 {
		e.Target = readlinkat(fd, base)
	}
	return e, nil
}

// Entry is what Lstat found.
type Entry struct {
	// Path is the full host path.
	Path string
	// Mode has the type bits (fs.ModeDir, fs.ModeSymlink...) and permissions.
	Mode fs.FileMode
	// Target is a symlink's target.
	Target string
}

func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFREG:
	default:
		mode |= fs.ModeIrregular
	}
	return mode
}

// WriteFile makes name a regular file holding r's content, with perm. It is written
// beside name under a temporary name and renamed over it, so a reader never sees it
// half-written, and a symlink already at name is replaced, never followed. Missing
// parents are made; a directory at name is an error.
func (d *Dir) WriteFile(name string, perm fs.FileMode, r io.Reader) (int64, error) {
	fd, base, parts, err := d.parent(name, true)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	tmp := tempName(base)
	ffd, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return 0, &fs.PathError{Op: "create", Path: d.join(parts), Err: err}
	}
	f := os.NewFile(uintptr(ffd), d.join(parts))
	n, err := io.Copy(f, r)
	if err == nil {
		err = f.Chmod(perm.Perm())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.replace(fd, tmp, base, parts)
	}
	if err != nil {
		unix.Unlinkat(fd, tmp, 0)
	}
	return n, err
}

// Symlink makes name a symlink to target, replacing a file or link already there. The
// target is stored as given and never resolved.
func (d *Dir) Symlink(target, name string) error {
	fd, base, parts, err := d.parent(name, true)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	tmp := tempName(base)
	if err := unix.Symlinkat(target, fd, tmp); err != nil {
		return &fs.PathError{Op: "symlink", Path: d.join(parts), Err: err}
	}
	if err := d.replace(fd, tmp, base, parts); err != nil {
		unix.Unlinkat(fd, tmp, 0)
		return err
	}
	return nil
}

// replace renames tmp over base in the directory fd, unless base is a directory.
func (d *Dir) replace(fd int, tmp, base string, parts []string) error {
	var st unix.Stat_t
	if unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return &fs.PathError{Op: "replace", Path: d.join(parts), Err: errors.New("is a directory on the host")}
	}
	if err := unix.Renameat(fd, tmp, fd, base); err != nil {
		return &fs.PathError{Op: "rename", Path: d.join(parts), Err: err}
	}
	return nil
}

// Remove removes the file or symlink name (never a directory, never what a link points to).
func (d *Dir) Remove(name string) error {
	fd, base, parts, err := d.parent(name, false)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Unlinkat(fd, base, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: d.join(parts), Err: err}
	}
	return nil
}

// Rename moves the file or symlink from src's name to d's name (the two directories on
// one filesystem), making d's missing parents and replacing a file or link at the
// destination. A directory at the destination is an error.
func Rename(src *Dir, from string, d *Dir, name string) error {
	sfd, sbase, _, err := src.parent(from, false)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	fd, base, parts, err := d.parent(name, true)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return &fs.PathError{Op: "replace", Path: d.join(parts), Err: errors.New("is a directory on the host")}
	}
	if err := unix.Renameat(sfd, sbase, fd, base); err != nil {
		return &fs.PathError{Op: "rename", Path: d.join(parts), Err: err}
	}
	return nil
}

func tempName(base string) string {
	b := make([]byte, 6)
	rand.Read(b)
	if len(base) > 200 {
		base = base[:200]
	}
	return "." + base + ".paddock-" + hex.EncodeToString(b)
}
