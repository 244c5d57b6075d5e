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
	"strconv"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// TarOut streams a PAX tar archive of the path: a file, a symlink (as a link) or a
// directory with everything beneath it. Entry names start with the path's last element.
func (f filesService) TarOut(req *guestpb.PathRequest, stream guestpb.DRPCFiles_TarOutStream) error {
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
	t := &tarring{rp: rp, tw: tw, left: req.GetMaxBytes(), limited: req.GetMaxBytes() > 0}
	if err := t.tree(stream.Context(), rp.rel, top, fi); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// tarring is one TarOut archive being written.
type tarring struct {
	rp *rootPath
	tw *tar.Writer
	// left is what remains of the archive's bytes of content, when limited.
	left    int64
	limited bool
}

// tree writes the entry for rel (described by its Lstat result fi) as name, and the
// entries beneath it when it is a directory. Sockets, devices and fifos are skipped.
func (t *tarring) tree(ctx context.Context, rel, name string, fi fs.FileInfo) error {
	rp, tw := t.rp, t.tw
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
	if fi.Mode().IsRegular() && t.limited {
		if hdr.Size > t.left {
			// A sparse file of a terabyte would be sent, and stored, whole.
			hdr.PAXRecords = map[string]string{guestproto.OmittedRecord: strconv.FormatInt(hdr.Size, 10)}
			hdr.Size = 0
		}
		t.left -= hdr.Size
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
			if err := t.tree(ctx, path.Join(rel, e.Name()), path.Join(name, e.Name()), efi); err != nil {
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
