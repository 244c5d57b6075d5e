package conform

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/inside"
)

const ws = inside.Workspace

func ctxT(t T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func testFiles(t T, sb *sandbox) {
	ctx, c := ctxT(t), sb.client
	t.Run("binary round trip", func(t T) {
		data := make([]byte, 1<<20)
		rand.Read(data)
		data = append(data, 0, '\r', '\n', 0xff, 0) // bytes a text path would mangle
		if _, err := c.WriteFile(ctx, ws, "bin/blob.bin", 0o640, true, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if _, err := c.ReadFile(ctx, ws, "bin/blob.bin", &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("read back %d bytes differing from the %d written", got.Len(), len(data))
		}
		// find, not stat or ls: coreutils 9 asks statx for AT_NO_AUTOMOUNT, which gVisor's 2022
		// builds refuse (EINVAL), and the suite runs under them too.
		if out := sb.mustRun(t, "find /workspace/bin/blob.bin -printf '%m %s'"); out != "640 1048581" {
			t.Fatalf("inside the sandbox the file is %q, want mode 640 size 1048581", out)
		}
	})
	t.Run("large", func(t T) {
		const size = 64 << 20
		h := sha256.New()
		src := io.TeeReader(io.LimitReader(rand.Reader, size), h)
		if n, err := c.WriteFile(ctx, ws, "large.bin", 0o644, false, src); err != nil || n != size {
			t.Fatalf("write: %d bytes, %v", n, err)
		}
		want := h.Sum(nil)
		h.Reset()
		if n, err := c.ReadFile(ctx, ws, "large.bin", h); err != nil || n != size {
			t.Fatalf("read: %d bytes, %v", n, err)
		}
		if !bytes.Equal(h.Sum(nil), want) {
			t.Fatal("64 MiB file read back with a different sha256")
		}
		if err := c.Remove(ctx, ws, "large.bin", false); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("atomic overwrite", func(t T) {
		if _, err := c.WriteFile(ctx, ws, "atomic.txt", 0, false, strings.NewReader("old")); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		r := &failingReader{data: []byte("new content that never completes"), cancel: cancel}
		if _, err := c.WriteFile(cctx, ws, "atomic.txt", 0, false, r); err == nil {
			t.Fatal("an interrupted write reported success")
		}
		if got := sb.mustRun(t, "cat /workspace/atomic.txt; find /workspace -maxdepth 1 -name '*atomic*' | wc -l"); got != "old1" {
			t.Fatalf("after an interrupted write: %q, want the old content and no temporary file", got)
		}
	})
	t.Run("stat list mkdir remove", func(t T) {
		if err := c.Mkdir(ctx, ws, "d/e/f", 0o755, true); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"d/one", "d/two"} {
			if _, err := c.WriteFile(ctx, ws, name, 0o600, false, strings.NewReader(name)); err != nil {
				t.Fatal(err)
			}
		}
		sb.mustRun(t, "ln -s one /workspace/d/link")
		fi, err := c.Stat(ctx, ws, inside.Workspace+"/d/one")
		if err != nil || fi.Type != "file" || fi.Size != 5 || fi.Mode != 0o600 {
			t.Fatalf("stat: %+v %v", fi, err)
		}
		if fi, err := c.Stat(ctx, ws, "d/link"); err != nil || fi.Type != "symlink" || fi.Link != "one" {
			t.Fatalf("stat of a symlink: %+v %v", fi, err)
		}
		entries, err := c.List(ctx, ws, "d")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name+":"+e.Type)
		}
		if got := strings.Join(names, " "); got != "e:dir link:symlink one:file two:file" {
			t.Fatalf("list: %s", got)
		}
		if err := c.Remove(ctx, ws, "d", false); err == nil {
			t.Fatal("non-recursive remove of a non-empty directory succeeded")
		}
		if err := c.Remove(ctx, ws, "d", true); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Stat(ctx, ws, "d"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("stat after remove: %v, want not exist", err)
		}
		if _, err := c.ReadFile(ctx, ws, "missing", io.Discard); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("read of a missing file: %v, want not exist", err)
		}
	})
}

// refusedOr turns "no error, and nothing from outside the root" into a refusal: some
// calls may answer about the link itself (a listing of one symlink entry) instead of
// failing, which is no escape.
func refusedOr(err error) error {
	if err != nil {
		return err
	}
	return errors.New("answered about the link itself")
}

// failingReader yields some data, then cancels the call and fails.
type failingReader struct {
	data   []byte
	cancel func()
	done   bool
}

func (r *failingReader) Read(p []byte) (int, error) {
	if !r.done {
		r.done = true
		return copy(p, r.data), nil
	}
	r.cancel()
	time.Sleep(50 * time.Millisecond)
	return 0, errors.New("source failed")
}

func testTar(t T, sb *sandbox) {
	ctx, c := ctxT(t), sb.client
	sb.mustRun(t, `mkdir -p /workspace/tree/sub && cd /workspace/tree && printf 'x' > 'name with spaces' &&
		printf '\377\000bin' > sub/bin && printf 'é' > 'ünïcode' && chmod 750 sub && printf '#!/bin/sh\n' > run.sh &&
		chmod 755 run.sh && ln -s ../outside link`)
	var archive bytes.Buffer
	if err := c.TarOut(ctx, ws, "tree", &archive); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(archive.Bytes()))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[strings.TrimSuffix(hdr.Name, "/")] = string(rune(hdr.Typeflag)) + " " + fs.FileMode(hdr.Mode).Perm().String() + " " + hdr.Linkname
	}
	for name, want := range map[string]string{
		"tree/link":             "2 -rwxrwxrwx ../outside",
		"tree/run.sh":           "0 -rwxr-xr-x ",
		"tree/sub/bin":          "0 -rw-r--r-- ",
		"tree/ünïcode":          "0 -rw-r--r-- ",
		"tree/sub":              "5 -rwxr-x--- ",
		"tree/name with spaces": "0 -rw-r--r-- ",
	} {
		if got[name] != want {
			t.Errorf("tar entry %q = %q, want %q (all: %v)", name, got[name], want, got)
		}
	}
	if _, _, err := c.TarIn(ctx, ws, "copy", bytes.NewReader(archive.Bytes())); err != nil {
		t.Fatal(err)
	}
	out := sb.mustRun(t, `cd /workspace && for f in 'name with spaces' sub/bin ünïcode run.sh; do cmp tree/"$f" copy/tree/"$f" || echo DIFF "$f"; done;
		find copy/tree/run.sh copy/tree/sub -maxdepth 0 -printf '%m\n'; readlink copy/tree/link`)
	if out != "755\n750\n../outside" {
		t.Fatalf("tar round trip: %q", out)
	}
}

func testSymlinkEscape(t T, sb *sandbox) {
	ctx, c := ctxT(t), sb.client
	sb.mustRun(t, "ln -sfn /etc /workspace/evil && ln -sfn ../../../../etc/hostname /workspace/rel && mkdir -p /workspace/box && ln -sfn / /workspace/box/root")
	checks := []struct {
		name string
		op   func() error
	}{
		{"read through absolute link", func() error { _, err := c.ReadFile(ctx, ws, "evil/passwd", io.Discard); return err }},
		{"read relative link", func() error { _, err := c.ReadFile(ctx, ws, "rel", io.Discard); return err }},
		{"read dotdot", func() error { _, err := c.ReadFile(ctx, ws, "../etc/passwd", io.Discard); return err }},
		{"read absolute outside root", func() error { _, err := c.ReadFile(ctx, ws, "/etc/passwd", io.Discard); return err }},
		{"write through link", func() error {
			_, err := c.WriteFile(ctx, ws, "box/root/tmp/escaped", 0o644, false, strings.NewReader("x"))
			return err
		}},
		// Large enough for the guest's file stream, which must refuse the same.
		{"large write through link", func() error {
			_, err := c.WriteFile(ctx, ws, "box/root/tmp/escaped-large", 0o644, false, bytes.NewReader(make([]byte, 2<<20)))
			return err
		}},
		{"large write of unknown size with parents through link", func() error {
			_, err := c.WriteFile(ctx, ws, "box/root/tmp/escaped-dir/large", 0o644, true, io.MultiReader(bytes.NewReader(make([]byte, 2<<20))))
			return err
		}},
		{"stat through link", func() error { _, err := c.Stat(ctx, ws, "evil/hostname"); return err }},
		{"list through link", func() error {
			entries, err := c.List(ctx, ws, "evil")
			for _, e := range entries {
				if e.Name == "passwd" {
					return nil // the listing shows /etc: an escape
				}
			}
			return refusedOr(err)
		}},
		{"mkdir through link", func() error { return c.Mkdir(ctx, ws, "box/root/tmp/newdir", 0o755, true) }},
		{"remove through link", func() error { return c.Remove(ctx, ws, "box/root/tmp", true) }},
		{"tar out through link", func() error {
			var buf bytes.Buffer
			err := c.TarOut(ctx, ws, "evil/", &buf)
			if bytes.Contains(buf.Bytes(), []byte("passwd")) {
				return nil // the archive holds /etc: an escape
			}
			return refusedOr(err)
		}},
		{"tar in through link", func() error {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			tw.WriteHeader(&tar.Header{Name: "root/tmp/escaped-tar", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
			tw.Write([]byte("x"))
			tw.Close()
			_, _, err := c.TarIn(ctx, ws, "box", &buf)
			return err
		}},
		{"tar in with dotdot", func() error {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			tw.WriteHeader(&tar.Header{Name: "../../tmp/escaped-dotdot", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
			tw.Write([]byte("x"))
			tw.Close()
			_, _, err := c.TarIn(ctx, ws, "box", &buf)
			return err
		}},
		{"tar in link then write", func() error {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			tw.WriteHeader(&tar.Header{Name: "l", Linkname: "/tmp", Typeflag: tar.TypeSymlink})
			tw.WriteHeader(&tar.Header{Name: "l/escaped-two-step", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
			tw.Write([]byte("x"))
			tw.Close()
			_, _, err := c.TarIn(ctx, ws, "box2", &buf)
			return err
		}},
	}
	for _, tc := range checks {
		t.Run(tc.name, func(t T) {
			if err := tc.op(); err == nil {
				t.Fatal("reached outside the root; it must be refused")
			}
		})
	}
	if got := sb.mustRun(t, "find /tmp -maxdepth 1 -name '*escaped*' | wc -l; test -d /tmp && echo tmp-intact"); got != "0\ntmp-intact" {
		t.Fatalf("something escaped into /tmp: %q", got)
	}
	// Paths that stay beneath the root through a link inside it are fine.
	sb.mustRun(t, "mkdir -p /workspace/real && echo inside > /workspace/real/f && ln -sfn real /workspace/alias")
	var buf bytes.Buffer
	if _, err := c.ReadFile(ctx, ws, "alias/f", &buf); err != nil || buf.String() != "inside\n" {
		t.Fatalf("read through a link that stays inside the root: %q %v", buf.String(), err)
	}
}
