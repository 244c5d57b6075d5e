package guestclient_test

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
)

type tarEntry struct {
	name, body, link string
	dir              bool
	mode             int64
}

// tarOf builds an archive of entries.
func tarOf(t *testing.T, entries ...tarEntry) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: time.Unix(1700000000, 0)}
		switch {
		case e.dir:
			h.Typeflag = tar.TypeDir
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func TestTarRoundTrip(t *testing.T) {
	c, _ := guesttest.Connect(t)
	ctx := t.Context()
	root := t.TempDir()
	bin := make([]byte, 700<<10)
	rand.Read(bin)
	src := filepath.Join(root, "out")
	writeFile(t, filepath.Join(src, "a.bin"), string(bin), 0o600)
	writeFile(t, filepath.Join(src, "run.sh"), "#!/bin/sh\necho hi\n", 0o755)
	writeFile(t, filepath.Join(src, "sub/deep/x.txt"), "x", 0o444)
	writeFile(t, filepath.Join(src, "empty"), "", 0o644)
	if err := os.MkdirAll(filepath.Join(src, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "sub/deep/x.txt", filepath.Join(src, "rel-link"))
	mustSymlink(t, "/etc/passwd", filepath.Join(src, "abs-link"))
	mtime := time.Unix(1600000000, 123456789)
	if err := os.Chtimes(filepath.Join(src, "a.bin"), mtime, mtime); err != nil {
		t.Fatal(err)
	}

	var archive bytes.Buffer
	if err := c.TarOut(ctx, root, "out", &archive); err != nil {
		t.Fatal(err)
	}
	names := tarNames(t, archive.Bytes())
	if !strings.HasPrefix(names, "out/ out/a.bin ") {
		t.Errorf("archive entries %q, want them to start with out/", names)
	}

	files, size, err := c.TarIn(ctx, root, "copy/here", bytes.NewReader(archive.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if files != 6 || size != int64(len(bin))+int64(len("#!/bin/sh\necho hi\n"))+1 {
		t.Errorf("TarIn = %d files, %d bytes", files, size)
	}
	if got, want := describeTree(t, filepath.Join(root, "copy/here/out")), describeTree(t, src); got != want {
		t.Errorf("extracted tree:\n%s\nwant:\n%s", got, want)
	}
	fi, err := os.Stat(filepath.Join(root, "copy/here/out/a.bin"))
	if err != nil || !fi.ModTime().Equal(mtime) {
		t.Errorf("mtime of a.bin = %v, %v; want %v", fi.ModTime(), err, mtime)
	}

	// A single file is archived under its own name.
	archive.Reset()
	if err := c.TarOut(ctx, root, "out/a.bin", &archive); err != nil {
		t.Fatal(err)
	}
	if names := tarNames(t, archive.Bytes()); names != "a.bin" {
		t.Errorf("archive of a file holds %q, want a.bin", names)
	}
	// Extracting again over existing files replaces them.
	if _, _, err := c.TarIn(ctx, root, "copy/here/out", bytes.NewReader(archive.Bytes())); err != nil {
		t.Errorf("extract over an existing file: %v", err)
	}
}

// tarNames lists an archive's entry names.
func tarNames(t *testing.T, archive []byte) string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	return strings.Join(names, " ")
}

// describeTree renders every entry beneath dir: name, type, mode, link target, content.
func describeTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b.WriteString(rel + " " + fi.Mode().String())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			b.WriteString(" -> " + l)
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data[:min(len(data), 20)]))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTarInAtomic(t *testing.T) {
	c, _ := guesttest.Connect(t)
	ctx := t.Context()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "dst/keep"), "old", 0o644)

	var full bytes.Buffer
	io.Copy(&full, tarOf(t,
		tarEntry{name: "keep", body: "new"},
		tarEntry{name: "big", body: strings.Repeat("z", 100<<10)},
	))
	truncated := bytes.NewReader(full.Bytes()[:full.Len()/2])
	if _, _, err := c.TarIn(ctx, root, "dst", truncated); err == nil {
		t.Fatal("TarIn of a truncated archive succeeded")
	}
	if got := describeTree(t, filepath.Join(root, "dst")); got != ". drwxr-xr-x\nkeep -rw-r--r-- old\n" {
		t.Errorf("after a failed TarIn the target holds:\n%s", got)
	}

	// A file may not replace a directory.
	writeFile(t, filepath.Join(root, "dst/dir/x"), "x", 0o644)
	_, _, err := c.TarIn(ctx, root, "dst", tarOf(t, tarEntry{name: "keep", body: "new"}, tarEntry{name: "dir", body: "f"}))
	if err == nil {
		t.Fatal("TarIn replaced a directory with a file")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "dst/keep")); string(b) != "old" {
		t.Errorf("keep = %q after a refused TarIn, want old", b)
	}

	// Other entry kinds are skipped; directories merge.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "fifo", Typeflag: tar.TypeFifo, Mode: 0o644})
	tw.WriteHeader(&tar.Header{Name: "dir/", Typeflag: tar.TypeDir, Mode: 0o750})
	tw.WriteHeader(&tar.Header{Name: "dir/y", Typeflag: tar.TypeReg, Mode: 0o600, Size: 1})
	tw.Write([]byte("y"))
	tw.Close()
	if _, _, err := c.TarIn(ctx, root, "dst", &buf); err != nil {
		t.Fatal(err)
	}
	want := ". drwxr-xr-x\ndir drwxr-x---\ndir/x -rw-r--r-- x\ndir/y -rw------- y\nkeep -rw-r--r-- old\n"
	if got := describeTree(t, filepath.Join(root, "dst")); got != want {
		t.Errorf("after merging, the target holds:\n%s\nwant:\n%s", got, want)
	}
}
