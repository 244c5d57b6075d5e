package guest

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// TarOut streams a PAX tar archive of the path: a file, a symlink (as a link) or a
// directory with everything beneath it. Entry names start with the path's last element.
func (f filesService) TarOut(req *guestpb.PathRequest, stream guestpb.Files_TarOutServer) error {
	rp, err := openPath(req.GetRoot(), req.GetPath())
	if err != nil {
		return err
	}
	defer rp.close()
	fi, err := rp.root.Lstat(rp.rel)
	if err != nil {
		return rp.error("tar", rp.rel, err)
	}
	top := path.Base(filepath.ToSlash(rp.full(rp.rel)))
	if top == "/" {
		top = "."
	}
	bw := bufio.NewWriterSize(chunkWriter{send: stream.Send}, guestproto.IOBufferSize)
	tw := tar.NewWriter(bw)
	if err := rp.tarTree(stream.Context(), tw, rp.rel, top, fi); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// tarTree writes the entry for rel (described by its Lstat result fi) as name, and the
// entries beneath it when it is a directory. Sockets, devices and fifos are skipped.
func (rp *rootPath) tarTree(ctx context.Context, tw *tar.Writer, rel, name string, fi fs.FileInfo) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var link string
	switch fi.Mode().Type() {
	case 0, fs.ModeDir:
	case fs.ModeSymlink:
		l, err := rp.root.Readlink(rel)
		if err != nil {
			return rp.error("readlink", rel, err)
		}
		link = l
	default:
		return nil
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return rp.error("tar", rel, err)
	}
	hdr.Name = name
	hdr.Format = tar.FormatPAX
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	if fi.IsDir() && !strings.HasSuffix(hdr.Name, "/") {
		hdr.Name += "/"
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("tar %s: %w", rp.full(rel), err)
	}
	switch {
	case fi.Mode().IsRegular():
		return rp.tarFile(tw, rel, hdr.Size)
	case fi.IsDir():
		dir, err := rp.root.Open(rel)
		if err != nil {
			return rp.error("tar", rel, err)
		}
		entries, err := dir.ReadDir(-1)
		dir.Close()
		if err != nil {
			return rp.error("tar", rel, err)
		}
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range entries {
			efi, err := e.Info()
			if err != nil {
				continue // removed since it was listed
			}
			if err := rp.tarTree(ctx, tw, path.Join(rel, e.Name()), path.Join(name, e.Name()), efi); err != nil {
				return err
			}
		}
	}
	return nil
}

// tarFile copies size bytes of the regular file rel into tw.
func (rp *rootPath) tarFile(tw *tar.Writer, rel string, size int64) error {
	file, err := rp.root.Open(rel)
	if err != nil {
		return rp.error("tar", rel, err)
	}
	defer file.Close()
	if _, err := io.CopyN(tw, file, size); err != nil {
		return rp.error("tar", rel, err)
	}
	return nil
}
