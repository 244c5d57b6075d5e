package guest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

const (
	defaultFileMode fs.FileMode = 0o644
	defaultDirMode  fs.FileMode = 0o755
	// tempPrefix starts the names of temporary files, which are renamed into place.
	tempPrefix = ".paddock-tmp-"
)

type filesService struct {
	s *Server
}

// Read streams the file at the path in guestproto.IOBufferSize chunks.
func (f filesService) Read(req *guestpb.PathRequest, stream guestpb.DRPCFiles_ReadStream) error {
	rp, file, _, err := openRead(req.GetRoot(), req.GetPath())
	if err != nil {
		return err
	}
	defer rp.close()
	defer file.Close()
	buf := make([]byte, guestproto.IOBufferSize)
	for {
		n, err := io.ReadFull(file, buf)
		if n > 0 {
			if serr := stream.Send(&guestpb.Chunk{Data: buf[:n]}); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return rp.error("read", rp.rel, err)
		}
	}
}

// openRead opens the regular file (or a directory's refusal) at p beneath root for a
// read, the checks of Files.Read and of the file stream's reads. The caller closes both
// results.
func openRead(root, p string) (*rootPath, *os.File, fs.FileInfo, error) {
	rp, err := openPath(root, p)
	if err != nil {
		return nil, nil, nil, err
	}
	file, err := rp.root.Open(rp.rel)
	if err != nil {
		rp.close()
		return nil, nil, nil, rp.error("open", rp.rel, err)
	}
	fi, err := file.Stat()
	if err == nil && fi.IsDir() {
		err = guestproto.Errorf(guestproto.FailedPrecondition, "read %s: is a directory", rp.full(rp.rel))
	} else if err != nil {
		err = rp.error("stat", rp.rel, err)
	}
	if err != nil {
		file.Close()
		rp.close()
		return nil, nil, nil, err
	}
	return rp, file, fi, nil
}

// Write replaces the file at the path atomically: the data goes to a temporary file in
// the same directory, which is synced and renamed into place only once all of it has
// arrived.
func (f filesService) Write(stream guestpb.DRPCFiles_WriteStream) error {
	resp, err := f.write(stream)
	if err != nil {
		return err
	}
	// Answered once write has cleaned up after itself: the daemon's call returns with
	// the answer.
	return stream.SendAndClose(resp)
}

func (f filesService) write(stream guestpb.DRPCFiles_WriteStream) (*guestpb.WriteResponse, error) {
	first, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	h := first.GetHeader()
	if h == nil {
		return nil, guestproto.Errorf(guestproto.InvalidArgument, "write: the first request must carry the header")
	}
	w, err := startWrite(h.GetRoot(), h.GetPath(), h.GetParents())
	if err != nil {
		return nil, err
	}
	defer w.abort()
	var size int64
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		n, err := w.file.Write(req.GetData())
		size += int64(n)
		if err != nil {
			return nil, w.rp.error("write", w.rp.rel, err)
		}
	}
	if err := w.commit(stream.Context(), guestproto.FileMode(h.GetMode(), defaultFileMode)); err != nil {
		return nil, err
	}
	f.s.ownWrite(w.rp.full(w.rp.rel))
	return &guestpb.WriteResponse{Size: size}, nil
}

// fileWrite is a write in progress, shared by Files.Write and the file stream: a new
// temporary file beside the destination, renamed into place by commit.
type fileWrite struct {
	rp   *rootPath
	tmp  string
	file *os.File
	done bool
	// replaced is the file the write took the place of, held until abort lets it go
	// (see beneath.RenameHolding).
	replaced *os.File
}

// startWrite resolves p beneath root for a write (creating missing parents when parents
// is set) and creates the temporary file the data goes to. The caller calls abort when
// done, which removes the temporary file unless commit succeeded.
func startWrite(root, p string, parents bool) (*fileWrite, error) {
	rp, err := openPath(root, p)
	if err != nil {
		return nil, err
	}
	if rp.rel == "." {
		rp.close()
		return nil, guestproto.Errorf(guestproto.InvalidArgument, "write %s: is the root directory", rp.full("."))
	}
	dir := path.Dir(rp.rel)
	if parents {
		if err := rp.root.MkdirAll(dir, defaultDirMode); err != nil {
			rp.close()
			return nil, rp.error("mkdir", dir, err)
		}
	}
	tmp, file, err := createTemp(rp.root, dir, path.Base(rp.rel))
	if err != nil {
		rp.close()
		return nil, rp.error("create", rp.rel, err)
	}
	return &fileWrite{rp: rp, tmp: tmp, file: file}, nil
}

// commit syncs the temporary file, gives it mode and renames it into place, unless ctx
// is done.
func (w *fileWrite) commit(ctx context.Context, mode fs.FileMode) error {
	rp := w.rp
	if err := w.file.Sync(); err != nil {
		return rp.error("sync", rp.rel, err)
	}
	if err := w.file.Chmod(mode); err != nil {
		return rp.error("chmod", rp.rel, err)
	}
	if err := w.file.Close(); err != nil {
		return rp.error("close", rp.rel, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	replaced, err := rp.root.RenameHolding(w.tmp, rp.rel)
	if err != nil {
		return rp.error("rename", rp.rel, err)
	}
	w.replaced, w.done = replaced, true
	return nil
}

// abort removes the temporary file unless commit succeeded, and releases the root. A
// file the write replaced is let go apart, so that freeing its blocks is not part of
// the write's answer.
func (w *fileWrite) abort() {
	if !w.done {
		w.file.Close()
		_ = w.rp.root.Remove(w.tmp)
	}
	if w.replaced != nil {
		go w.replaced.Close()
	}
	w.rp.close()
}

// createTemp creates a new, empty temporary file in dir, named after base.
func createTemp(root *beneath, dir, base string) (string, *os.File, error) {
	for range 100 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := path.Join(dir, tempPrefix+base+"-"+hex.EncodeToString(b[:]))
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, errors.New("no unused temporary name")
}

// Stat describes the path without following a final symlink.
func (f filesService) Stat(_ context.Context, req *guestpb.PathRequest) (*guestpb.FileInfo, error) {
	rp, err := openPath(req.GetRoot(), req.GetPath())
	if err != nil {
		return nil, err
	}
	defer rp.close()
	fi, err := rp.root.Lstat(rp.rel)
	if err != nil {
		return nil, rp.error("stat", rp.rel, err)
	}
	return rp.fileInfo(rp.rel, fi), nil
}

// List describes the entries of the directory at the path, sorted by name; a path that
// is not a directory (a symlink included) lists as itself.
func (f filesService) List(_ context.Context, req *guestpb.PathRequest) (*guestpb.ListResponse, error) {
	rp, err := openPath(req.GetRoot(), req.GetPath())
	if err != nil {
		return nil, err
	}
	defer rp.close()
	fi, err := rp.root.Lstat(rp.rel)
	if err != nil {
		return nil, rp.error("list", rp.rel, err)
	}
	if !fi.IsDir() {
		return &guestpb.ListResponse{Entries: []*guestpb.FileInfo{rp.fileInfo(rp.rel, fi)}}, nil
	}
	dir, err := rp.root.Open(rp.rel)
	if err != nil {
		return nil, rp.error("list", rp.rel, err)
	}
	defer dir.Close()
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return nil, rp.error("list", rp.rel, err)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := make([]*guestpb.FileInfo, 0, len(entries))
	for _, e := range entries {
		efi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed
		}
		if err != nil {
			return nil, rp.error("list", path.Join(rp.rel, e.Name()), err)
		}
		out = append(out, rp.fileInfo(path.Join(rp.rel, e.Name()), efi))
	}
	return &guestpb.ListResponse{Entries: out}, nil
}

// fileInfo converts the Lstat result fi of name into its wire form.
func (rp *rootPath) fileInfo(name string, fi fs.FileInfo) *guestpb.FileInfo {
	base := fi.Name()
	if name == "." {
		base = path.Base(filepath.ToSlash(rp.dir))
	}
	out := &guestpb.FileInfo{
		Name:          base,
		Size:          fi.Size(),
		Mode:          guestproto.UnixMode(fi.Mode()),
		MtimeUnixNano: fi.ModTime().UnixNano(),
	}
	switch fi.Mode().Type() {
	case 0:
		out.Type = "file"
	case fs.ModeDir:
		out.Type = "dir"
	case fs.ModeSymlink:
		out.Type = "symlink"
		out.Link, _ = rp.root.Readlink(name)
	default:
		out.Type = "other"
	}
	return out
}

// Remove removes the path (a final symlink itself, never its target), and everything
// beneath it when recursive is set. The root itself cannot be removed.
func (f filesService) Remove(_ context.Context, req *guestpb.RemoveRequest) (*guestpb.RemoveResponse, error) {
	rp, err := openPath(req.GetRoot(), req.GetPath())
	if err != nil {
		return nil, err
	}
	defer rp.close()
	if rp.rel == "." {
		return nil, guestproto.Errorf(guestproto.InvalidArgument, "remove %s: is the root directory", rp.full("."))
	}
	if req.GetRecursive() {
		// RemoveAll succeeds on a missing path; an escape must still be refused.
		if _, err := rp.root.Lstat(rp.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, rp.error("remove", rp.rel, err)
		}
		err = rp.root.RemoveAll(rp.rel)
	} else {
		err = rp.root.Remove(rp.rel)
	}
	if err != nil {
		return nil, rp.error("remove", rp.rel, err)
	}
	return &guestpb.RemoveResponse{}, nil
}

// Mkdir creates the directory at the path, and its missing parents when parents is set
// (then an existing directory is not an error).
func (f filesService) Mkdir(_ context.Context, req *guestpb.MkdirRequest) (*guestpb.MkdirResponse, error) {
	rp, err := openPath(req.GetRoot(), req.GetPath())
	if err != nil {
		return nil, err
	}
	defer rp.close()
	mode := guestproto.FileMode(req.GetMode(), defaultDirMode)
	if req.GetParents() {
		err = rp.root.MkdirAll(rp.rel, mode)
	} else {
		err = rp.root.Mkdir(rp.rel, mode)
	}
	if err != nil {
		return nil, rp.error("mkdir", rp.rel, err)
	}
	return &guestpb.MkdirResponse{}, nil
}
