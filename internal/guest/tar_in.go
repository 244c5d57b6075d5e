package guest

import (
	"archive/tar"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// stagingPrefix starts the name of the directory, inside the target, that an archive is
// extracted into before its entries are moved into place.
const stagingPrefix = ".paddock-tarin-"

// TarIn extracts a tar archive into the directory at the path, creating it with its
// parents. The archive is first extracted into a hidden staging directory inside the
// target; only once all of it has arrived and extracted cleanly are its entries renamed
// into place, so a failed or cancelled call leaves the target as it was.
//
// Regular files, directories and symlinks are extracted with their mode bits and
// modification times; other entry types are skipped. Entry names may not be absolute or
// contain "..", and no entry is written through a symlink.
func (f filesService) TarIn(stream guestpb.DRPCFiles_TarInStream) error {
	resp, err := f.tarIn(stream)
	if err != nil {
		return err
	}
	// Answered once tarIn has removed its staging directory: the daemon's call returns
	// with the answer.
	return stream.SendAndClose(resp)
}

func (f filesService) tarIn(stream guestpb.DRPCFiles_TarInStream) (*guestpb.TarInResponse, error) {
	first, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	h := first.GetHeader()
	if h == nil {
		return nil, guestproto.Errorf(guestproto.InvalidArgument, "tar in: the first request must carry the header")
	}
	rp, err := openPath(h.GetRoot(), h.GetPath())
	if err != nil {
		return nil, err
	}
	defer rp.close()
	if err := rp.root.MkdirAll(rp.rel, defaultDirMode); err != nil {
		return nil, rp.error("mkdir", rp.rel, err)
	}
	dst, err := rp.root.OpenRoot(rp.rel)
	if err != nil {
		return nil, rp.error("open", rp.rel, err)
	}
	defer dst.Close()
	x := &extraction{rp: rp, root: dst, log: f.s.log, dirs: map[string]dirAttrs{}}
	if err := x.makeStaging(); err != nil {
		return nil, err
	}
	defer func() { _ = dst.RemoveAll(x.staging) }()

	body := &chunkReader{next: func() ([]byte, error) {
		req, err := stream.Recv()
		return req.GetData(), err
	}}
	tr := tar.NewReader(body)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, x.readError(err)
		}
		if err := x.extract(hdr, tr); err != nil {
			return nil, err
		}
	}
	// Whatever follows the end-of-archive marker is read and ignored.
	if _, err := io.Copy(io.Discard, body); err != nil {
		return nil, x.readError(err)
	}
	var moves []move
	if err := x.plan(".", &moves); err != nil {
		return nil, err
	}
	for _, m := range moves {
		if m.replace {
			if err := dst.Remove(m.to); err != nil {
				return nil, x.error(m.to, err)
			}
		}
		if err := dst.Rename(m.from, m.to); err != nil {
			return nil, x.error(m.to, err)
		}
	}
	x.setDirAttrs()
	return &guestpb.TarInResponse{Files: x.files, Bytes: x.bytes}, nil
}

// extraction is the state of one TarIn call.
type extraction struct {
	rp  *rootPath
	log *slog.Logger
	// root is the target directory; every name below is relative to it.
	root    *beneath
	staging string
	// dirs holds the attributes of the archive's directories, applied once every entry
	// is in place.
	dirs         map[string]dirAttrs
	files, bytes int64
}

type dirAttrs struct {
	mode  fs.FileMode
	mtime time.Time
}

// move is one rename from the staging directory into the target.
type move struct {
	from, to string
	// replace says that a non-directory at to must be removed first (a directory from
	// the archive takes its place).
	replace bool
}

// error maps err for the entry name (relative to the target) to a status.
func (x *extraction) error(name string, err error) error {
	return x.rp.error("tar in", path.Join(x.rp.rel, name), err)
}

// readError maps an error from reading the archive: the stream's own errors pass
// through; anything else is a malformed archive.
func (x *extraction) readError(err error) error {
	if isStatus(err) {
		return err
	}
	return guestproto.Errorf(guestproto.InvalidArgument, "tar in %s: read archive: %v", x.rp.full(x.rp.rel), err)
}

// makeStaging creates the staging directory.
func (x *extraction) makeStaging() error {
	for range 100 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := stagingPrefix + hex.EncodeToString(b[:])
		err := x.root.Mkdir(name, 0o700)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return x.error(name, err)
		}
		x.staging = name
		return nil
	}
	return guestproto.Errorf(guestproto.Internal, "tar in %s: no unused staging name", x.rp.full(x.rp.rel))
}

// entryName checks a tar entry name and returns it clean and relative.
func (x *extraction) entryName(name string) (string, error) {
	clean := path.Clean(name)
	if path.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", statusError("tar in", name, errPathEscapes)
	}
	return clean, nil
}

// extract writes one entry into the staging directory.
func (x *extraction) extract(hdr *tar.Header, r io.Reader) error {
	name, err := x.entryName(hdr.Name)
	if err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir, tar.TypeSymlink:
	default:
		return nil
	}
	if name == "." {
		return nil // the target directory itself
	}
	if err := x.checkParents(name); err != nil {
		return err
	}
	sp := path.Join(x.staging, name)
	if err := x.root.MkdirAll(path.Dir(sp), 0o700); err != nil {
		return x.error(name, err)
	}
	// A later entry of the same name replaces an earlier one.
	if fi, err := x.root.Lstat(sp); err == nil {
		if hdr.Typeflag == tar.TypeDir && fi.IsDir() {
			x.dirs[name] = dirAttrs{guestproto.FileMode(uint32(hdr.Mode), defaultDirMode), hdr.ModTime}
			return nil
		}
		if err := x.root.RemoveAll(sp); err != nil {
			return x.error(name, err)
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := x.root.Mkdir(sp, 0o700); err != nil {
			return x.error(name, err)
		}
		x.dirs[name] = dirAttrs{guestproto.FileMode(uint32(hdr.Mode), defaultDirMode), hdr.ModTime}
	case tar.TypeSymlink:
		if err := x.root.Symlink(hdr.Linkname, sp); err != nil {
			return x.error(name, err)
		}
		x.files++
	case tar.TypeReg:
		return x.extractFile(name, sp, hdr, r)
	}
	return nil
}

// extractFile writes a regular file entry at sp in the staging directory.
func (x *extraction) extractFile(name, sp string, hdr *tar.Header, r io.Reader) error {
	file, err := x.root.OpenFile(sp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return x.error(name, err)
	}
	n, err := io.Copy(file, r)
	x.bytes += n
	if err != nil {
		file.Close()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return x.readError(err)
		}
		if isStatus(err) {
			return err
		}
		return x.error(name, err)
	}
	if err := file.Chmod(guestproto.FileMode(uint32(hdr.Mode), defaultFileMode)); err != nil {
		file.Close()
		return x.error(name, err)
	}
	if err := file.Close(); err != nil {
		return x.error(name, err)
	}
	if err := x.root.Chtimes(sp, hdr.ModTime, hdr.ModTime); err != nil {
		return x.error(name, err)
	}
	x.files++
	return nil
}

// checkParents refuses an entry whose parent directories (as extracted so far) include
// a symlink or something that is not a directory.
func (x *extraction) checkParents(name string) error {
	for _, p := range splitParents(name) {
		fi, err := x.root.Lstat(path.Join(x.staging, p))
		if errors.Is(err, fs.ErrNotExist) {
			return nil // created below as a directory
		}
		if err != nil {
			return x.error(p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return guestproto.Errorf(guestproto.PathEscapes, "tar in %s: entry %q would be written through the symlink %q: %v",
				x.rp.full(x.rp.rel), name, p, errPathEscapes)
		}
		if !fi.IsDir() {
			return guestproto.Errorf(guestproto.FailedPrecondition, "tar in %s: entry %q: %q is not a directory",
				x.rp.full(x.rp.rel), name, p)
		}
	}
	return nil
}

// plan lists the renames that move the staged directory rel into the target: an entry
// the target lacks moves whole; a directory the target has too is merged entry by entry;
// anything else the target has is replaced, except that a directory is never replaced by
// a non-directory. plan changes nothing, so a conflict leaves the target untouched.
func (x *extraction) plan(rel string, moves *[]move) error {
	dir, err := x.root.Open(path.Join(x.staging, rel))
	if err != nil {
		return x.error(rel, err)
	}
	entries, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		return x.error(rel, err)
	}
	for _, e := range entries {
		from, to := path.Join(x.staging, rel, e.Name()), path.Join(rel, e.Name())
		fi, err := x.root.Lstat(to)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			*moves = append(*moves, move{from: from, to: to})
		case err != nil:
			return x.error(to, err)
		case fi.IsDir() && e.IsDir():
			if err := x.plan(to, moves); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0 && e.IsDir():
			return guestproto.Errorf(guestproto.PathEscapes, "tar in %s: the directory %q would be written through the symlink there: %v",
				x.rp.full(x.rp.rel), to, errPathEscapes)
		case fi.IsDir():
			return guestproto.Errorf(guestproto.FailedPrecondition,
				"tar in %s: %s is a directory; the archive has a %s there",
				x.rp.full(x.rp.rel), to, entryKind(e))
		default:
			*moves = append(*moves, move{from: from, to: to, replace: e.IsDir()})
		}
	}
	return nil
}

// setDirAttrs gives the archive's directories their modes and times, deepest first so
// that setting a child does not change its parent. A directory that existed before and
// that the guest may not change keeps its attributes.
func (x *extraction) setDirAttrs() {
	names := make([]string, 0, len(x.dirs))
	for n := range x.dirs {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return strings.Count(b, "/") - strings.Count(a, "/")
	})
	for _, n := range names {
		a := x.dirs[n]
		if err := x.root.Chmod(n, a.mode); err != nil {
			x.log.Debug("tar in: chmod", "dir", x.rp.full(path.Join(x.rp.rel, n)), "err", err)
		}
		if err := x.root.Chtimes(n, a.mtime, a.mtime); err != nil {
			x.log.Debug("tar in: chtimes", "dir", x.rp.full(path.Join(x.rp.rel, n)), "err", err)
		}
	}
}

func entryKind(e fs.DirEntry) string {
	switch e.Type() {
	case fs.ModeSymlink:
		return "symlink"
	case 0:
		return "file"
	}
	return fmt.Sprintf("%v", e.Type())
}
