package storage

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/paddockhq/paddock/internal/hostdisk"
)

// tmpPrefix begins the names of the files Dir.Put writes before renaming them into
// place. CheckKey refuses a segment beginning with '.', so no key names one.
const tmpPrefix = ".tmp-"

// Dir is a Store in a local directory: each object is a file of the same relative path
// beneath the root (directories 0700, files 0600). Every access goes through os.Root,
// so a symbolic link planted inside the root cannot lead a read or a write outside it.
type Dir struct {
	root string
}

var _ Store = (*Dir)(nil)

// NewDir returns the store in directory root, creating it (0700) when missing.
func NewDir(root string) (*Dir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("store directory %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("create store directory: %w", err)
	}
	d := &Dir{root: abs}
	r, err := d.open()
	if err != nil {
		return nil, err
	}
	return d, r.Close()
}

// String returns the directory's path.
func (d *Dir) String() string { return d.root }

func (d *Dir) open() (*os.Root, error) {
	r, err := os.OpenRoot(d.root)
	if err != nil {
		return nil, fmt.Errorf("open store directory: %w", err)
	}
	return r, nil
}

// Put writes r to a temporary file beside the object, syncs it, and renames it into
// place, so that the object appears whole or not at all. With size >= 0, r must hold
// exactly size bytes.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader, size int64) (err error) {
	if err := CheckKey(key); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	root, err := d.open()
	if err != nil {
		return err
	}
	defer closeInto(root, &err)
	parent := path.Dir(key)
	if err := root.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	tmp := path.Join(parent, tmpPrefix+rand.Text())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	defer func() {
		if err != nil {
			if rerr := root.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("remove %s: %w", tmp, rerr))
			}
		}
	}()
	if err := writeFile(ctx, f, r, size, hostdisk.Room(d.root)); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if err := root.Rename(tmp, key); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	// The rename is durable once the directory is.
	dir, err := root.Open(parent)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if err := dir.Sync(); err != nil {
		dir.Close()
		return fmt.Errorf("put %s: sync directory: %w", key, err)
	}
	return dir.Close()
}

// ErrNoRoom is an object that would leave the store's disk fuller than hostdisk.Room
// allows: what a sandbox committed comes whatever its size, and an automatic snapshot of
// it must not fill the host's disk.
var ErrNoRoom = errors.New("more than the store's disk can still take (a twentieth of its free space, at most 1 GiB, stays free)")

// writeFile copies r (size bytes, or -1) into f, syncs and closes it. room, when above 0,
// is the most it writes.
func writeFile(ctx context.Context, f *os.File, r io.Reader, size, room int64) error {
	if room > 0 && size > room {
		f.Close()
		return fmt.Errorf("%d bytes: %w", size, ErrNoRoom)
	}
	src := io.Reader(readerFunc(func(p []byte) (int, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return r.Read(p)
	}))
	if size >= 0 {
		src = io.LimitReader(src, size+1)
	}
	if room > 0 {
		src = io.LimitReader(src, room+1)
	}
	n, err := io.Copy(f, src)
	if err == nil && room > 0 && n > room {
		err = ErrNoRoom
	}
	if err == nil && size >= 0 && n != size {
		err = fmt.Errorf("got %d bytes, want %d", n, size)
		if n > size {
			err = fmt.Errorf("got more than the %d bytes announced", size)
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Get opens the object's file.
func (d *Dir) Get(ctx context.Context, key string) (_ io.ReadCloser, err error) {
	if err := CheckKey(key); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	root, err := d.open()
	if err != nil {
		return nil, err
	}
	defer closeInto(root, &err)
	f, err := root.Open(key)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, notExist(err))
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file: %w", fs.ErrNotExist)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return f, nil
}

// Stat returns the size of the object's file.
func (d *Dir) Stat(ctx context.Context, key string) (_ int64, err error) {
	if err := CheckKey(key); err != nil {
		return 0, fmt.Errorf("stat: %w", err)
	}
	root, err := d.open()
	if err != nil {
		return 0, err
	}
	defer closeInto(root, &err)
	fi, err := root.Stat(key)
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", key, notExist(err))
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("stat %s: not a regular file: %w", key, fs.ErrNotExist)
	}
	return fi.Size(), nil
}

// List walks the directory of prefix, returning its regular files whose paths are keys:
// temporary files, symbolic links and whatever else is there are not objects.
func (d *Dir) List(ctx context.Context, prefix string) (_ []string, err error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	root, err := d.open()
	if err != nil {
		return nil, err
	}
	defer closeInto(root, &err)
	base := strings.TrimSuffix(prefix, "/")
	if base == "" {
		base = "."
	}
	var keys []string
	err = fs.WalkDir(root.FS(), base, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == base && errors.Is(notExist(err), fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.Type().IsRegular() && CheckKey(p) == nil {
			keys = append(keys, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s in %s: %w", prefix, d.root, err)
	}
	slices.Sort(keys)
	return keys, nil
}

// Delete removes the object's file. A key naming a directory names no object, so
// nothing is removed.
func (d *Dir) Delete(ctx context.Context, key string) (err error) {
	if err := CheckKey(key); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	root, err := d.open()
	if err != nil {
		return err
	}
	defer closeInto(root, &err)
	fi, err := root.Lstat(key)
	if err == nil && fi.IsDir() {
		return nil
	}
	if err == nil {
		err = root.Remove(key)
	}
	if err != nil && !errors.Is(notExist(err), fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// Clean removes the temporary files that Puts cut off by a crash left behind, when
// they are older than olderThan (a Put under way keeps its file young), and says how
// many it removed. They are never listed, so Clean only frees their space.
func (d *Dir) Clean(ctx context.Context, olderThan time.Duration) (removed int, err error) {
	root, err := d.open()
	if err != nil {
		return 0, err
	}
	defer closeInto(root, &err)
	cutoff := time.Now().Add(-olderThan)
	err = fs.WalkDir(root.FS(), ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), tmpPrefix) {
			return nil
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // renamed into place meanwhile
		}
		if err != nil {
			return err
		}
		if fi.ModTime().After(cutoff) {
			return nil
		}
		if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removed++
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("clean %s: %w", d.root, err)
	}
	return removed, nil
}

// notExist makes "a parent is a file" (ENOTDIR) read as what it means for a key: no
// such object.
func notExist(err error) error {
	if errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w (%w)", fs.ErrNotExist, err)
	}
	return err
}

// closeInto closes c, keeping its error in *err when there is no other.
func closeInto(c io.Closer, err *error) {
	if cerr := c.Close(); *err == nil && cerr != nil {
		*err = cerr
	}
}

// readerFunc is a function as an io.Reader.
type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
