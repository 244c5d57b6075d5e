// Package archive packs host directories into tar streams and unpacks tar streams onto
// the host, never writing outside the destination: every entry is resolved through
// hostfs, so neither "..", an absolute name, nor a symlink from the archive or already
// in the destination can lead a write elsewhere. Archives from a sandbox are untrusted
// input.
package archive

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/paddockhq/paddock/internal/hostfs"
	"github.com/paddockhq/paddock/internal/termtext"
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
	// Top, when set, is the first path element every entry must have (the name of what
	// was asked for): an entry elsewhere is an error, so an archive of dist/ cannot put
	// .git/hooks/pre-commit or .bashrc beside it in the destination.
	Top string
	// MaxBytes, when positive, is the most file content Unpack writes (Room of the
	// destination, say): an entry that would pass it is refused, by its header, before
	// a byte of it is written (*NoRoomError). A sparse file of a terabyte costs a
	// sandbox nothing, and the host its whole size.
	MaxBytes int64
}

// NoRoomError is an archive entry that would take a copy past its MaxBytes.
type NoRoomError struct {
	Name string
	// Size is the entry's; Room what was left of MaxBytes.
	Size, Room int64
}

func (e *NoRoomError) Error() string {
	return fmt.Sprintf("%s is %s: more than the %s a copy may still take of the host's free disk", e.Name, termtext.Size(e.Size), termtext.Size(e.Room))
}

// Stats counts what Unpack wrote.
type Stats struct {
	Files int64
	Bytes int64
	// Links are the symlinks made, kept as links: a caller reports those that point
	// out of the destination.
	Links []Link
}

// Link is a symlink Unpack made.
type Link struct {
	Name, Target string
}

// Unpack extracts a tar stream into the directory dst, which must exist. Regular files,
// directories and symlinks are created with their permission bits, less group and others'
// write (as a umask of 022 would), and other entries are skipped; a directory that was
// already on the host keeps its own mode.
// Entries are resolved beneath dst without following any symlink (see hostfs): an entry
// beneath a link, from this archive or already on the host, is an error, as is a name
// with "..". Files are written atomically, replacing a link at their name.
func Unpack(r io.Reader, dst string, opts Options) (Stats, error) {
	var st Stats
	d, err := hostfs.Open(dst)
	if err != nil {
		return st, err
	}
	defer d.Close()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("read archive: %w", err)
		}
		name, ok := entryName(hdr.Name, opts)
		if !ok {
			return st, fmt.Errorf("archive entry %q: unsafe name", hdr.Name)
		}
		if name == "" {
			continue
		}
		mode := fs.FileMode(hdr.Mode).Perm() &^ 0o022
		switch hdr.Typeflag {
		case tar.TypeDir:
			_, err := d.Lstat(name)
			existed := err == nil
			if err := d.MkdirAll(name, 0o755); err != nil {
				return st, fmt.Errorf("archive entry %q: %w", hdr.Name, err)
			}
			if existed {
				continue
			}
			if err := d.ChmodDir(name, mode|0o700); err != nil {
				return st, fmt.Errorf("archive entry %q: %w", hdr.Name, err)
			}
		case tar.TypeReg:
			if opts.MaxBytes > 0 && hdr.Size > opts.MaxBytes-st.Bytes {
				return st, &NoRoomError{Name: name, Size: hdr.Size, Room: opts.MaxBytes - st.Bytes}
			}
			n, err := d.WriteFile(name, mode, tr)
			if err != nil {
				return st, fmt.Errorf("archive entry %q: %w", hdr.Name, err)
			}
			st.Files++
			st.Bytes += n
		case tar.TypeSymlink:
			if err := d.Symlink(hdr.Linkname, name); err != nil {
				return st, fmt.Errorf("archive entry %q: %w", hdr.Name, err)
			}
			st.Files++
			st.Links = append(st.Links, Link{Name: name, Target: hdr.Linkname})
		}
	}
}

// entryName strips an entry's leading components. Absolute names, names with a ".."
// component and names outside opts.Top are unsafe; a name stripped to nothing is
// skipped ("", true).
func entryName(name string, opts Options) (string, bool) {
	name = strings.TrimSuffix(name, "/")
	if name == "" {
		return "", true
	}
	parts, err := hostfs.Split(name)
	if err != nil {
		return "", false
	}
	if opts.Top != "" && (len(parts) == 0 || parts[0] != opts.Top) {
		return "", len(parts) == 0
	}
	strip := opts.StripComponents
	if strip >= len(parts) {
		return "", true
	}
	return strings.Join(parts[strip:], "/"), true
}

// Escapes reports whether a symlink named name (relative to a destination) with target
// leads out of that destination when followed: absolute targets, and relative ones
// that climb above it.
func Escapes(name, target string) bool {
	if path.IsAbs(target) {
		return true
	}
	p := path.Join(path.Dir(name), target)
	return p == ".." || strings.HasPrefix(p, "../")
}
