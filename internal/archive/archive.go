// Package archive packs host directories into tar streams and unpacks tar streams onto
// the host, never writing outside the destination: every entry is resolved through an
// os.Root, so neither "..", an absolute name, nor a symlink from the archive can lead
// a write elsewhere. Archives from a sandbox are untrusted input.
package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Pack writes a tar of src (a file or directory) to w. Entry names start with prefix
// (which may be empty, to pack a directory's contents). Symlinks are packed as links.
func Pack(w io.Writer, src, prefix string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		name := path.Join(prefix, filepath.ToSlash(rel))
		if rel == "." {
			name = prefix
			if name == "" {
				return nil
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return nil // sockets and devices are skipped
		}
		hdr.Name = name
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname, hdr.Uid, hdr.Gid = "", "", 0, 0
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pack %s: %w", src, err)
	}
	return tw.Close()
}

// Options control Unpack.
type Options struct {
	// StripComponents drops this many leading path elements from each entry name.
	StripComponents int
}

// Stats counts what Unpack wrote.
type Stats struct {
	Files int64
	Bytes int64
}

// Unpack extracts a tar stream into the directory dst, which must exist. Regular files,
// directories and symlinks are created with their mode bits; other entries are skipped.
func Unpack(r io.Reader, dst string, opts Options) (Stats, error) {
	var st Stats
	root, err := os.OpenRoot(dst)
	if err != nil {
		return st, err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("read archive: %w", err)
		}
		name, ok := entryName(hdr.Name, opts.StripComponents)
		if !ok {
			return st, fmt.Errorf("archive entry %q: unsafe name", hdr.Name)
		}
		if name == "" {
			continue
		}
		mode := fs.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return st, fmt.Errorf("archive entry %q: %w", hdr.Name, err)
			}
			if err := root.Chmod(name, mode|0o700); err != nil {
				return st, err
			}
		case tar.TypeReg:
			if err := mkParents(root, name); err != nil {
				return st, fmt.Errorf("archive entry %q: %w", hdr.Name, err)
			}
			n, err := writeFile(root, name, mode, tr)
			if err != nil {
				return st, fmt.Errorf("archive entry %q: %w", hdr.Name, err)
			}
			st.Files++
			st.Bytes += n
		case tar.TypeSymlink:
			if err := mkParents(root, name); err != nil {
				return st, fmt.Errorf("archive entry %q: %w", hdr.Name, err)
			}
			if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return st, fmt.Errorf("archive entry %q: %w", hdr.Name, err)
			}
			if err := root.Symlink(hdr.Linkname, name); err != nil {
				return st, fmt.Errorf("archive entry %q: %w", hdr.Name, err)
			}
			st.Files++
		}
	}
}

func entryName(name string, strip int) (string, bool) {
	name = strings.TrimSuffix(name, "/")
	if name == "" || path.IsAbs(name) {
		return "", name == ""
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", false
	}
	parts := strings.Split(clean, "/")
	if strip >= len(parts) {
		return "", true
	}
	return strings.Join(parts[strip:], "/"), true
}

func mkParents(root *os.Root, name string) error {
	if dir := path.Dir(name); dir != "." {
		return root.MkdirAll(dir, 0o755)
	}
	return nil
}

// writeFile replaces name with the content of r: a symlink already at name is replaced,
// never followed.
func writeFile(root *os.Root, name string, mode fs.FileMode, r io.Reader) (int64, error) {
	if fi, err := root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		if err := root.Remove(name); err != nil {
			return 0, err
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chmod(name, mode)
	}
	return n, err
}
