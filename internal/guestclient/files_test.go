package guestclient_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
)

func TestFileRoundTrip(t *testing.T) {
	c, _ := guesttest.Connect(t)
	root := t.TempDir()
	for _, size := range []int{0, 1, 256 << 10, 1<<20 + 3} {
		data := make([]byte, size)
		rand.Read(data)
		n, err := c.WriteFile(t.Context(), root, "dir/f.bin", 0o640, true, bytes.NewReader(data))
		if err != nil || n != int64(size) {
			t.Fatalf("WriteFile(%d bytes) = %d, %v", size, n, err)
		}
		var got bytes.Buffer
		n, err = c.ReadFile(t.Context(), root, "dir/f.bin", &got)
		if err != nil || n != int64(size) || !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("ReadFile = %d bytes, %v; want the %d written", n, err, size)
		}
		fi, err := os.Stat(filepath.Join(root, "dir/f.bin"))
		if err != nil || fi.Mode().Perm() != 0o640 {
			t.Fatalf("written file: %v, %v; want mode 0640", fi.Mode(), err)
		}
	}
	// An absolute path beneath the root is the same file.
	var got bytes.Buffer
	if _, err := c.ReadFile(t.Context(), root, filepath.Join(root, "dir/f.bin"), &got); err != nil {
		t.Fatalf("read by absolute path: %v", err)
	}
}

func TestFileRoundTrip64MiB(t *testing.T) {
	c, _ := guesttest.Connect(t)
	root := t.TempDir()
	const size = 64 << 20
	h := sha256.New()
	src := io.TeeReader(io.LimitReader(rand.Reader, size), h)
	if n, err := c.WriteFile(t.Context(), root, "big.bin", 0, false, src); err != nil || n != size {
		t.Fatalf("WriteFile = %d, %v", n, err)
	}
	want := h.Sum(nil)
	h.Reset()
	if n, err := c.ReadFile(t.Context(), root, "big.bin", h); err != nil || n != size {
		t.Fatalf("ReadFile = %d, %v", n, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		t.Errorf("sha256 of the read file %x, of the written data %x", got, want)
	}
	fi, err := os.Stat(filepath.Join(root, "big.bin"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("default mode: %v, %v; want 0644", fi.Mode(), err)
	}
}

// cancellingReader delivers n bytes, then cancels the call and blocks until it ends.
type cancellingReader struct {
	n      int
	cancel context.CancelFunc
	ctx    context.Context
}

func (r *cancellingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		r.cancel()
		<-r.ctx.Done()
		return 0, r.ctx.Err()
	}
	k := min(len(p), r.n)
	clear(p[:k])
	r.n -= k
	return k, nil
}

func TestWriteFileAtomic(t *testing.T) {
	c, _ := guesttest.Connect(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "f"), "old content", 0o644)

	t.Run("cancelled mid-write", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		_, err := c.WriteFile(ctx, root, "f", 0, false, &cancellingReader{n: 3 << 20, cancel: cancel, ctx: ctx})
		if err == nil {
			t.Fatal("WriteFile succeeded although it was cancelled")
		}
		checkUntouched(t, root)
	})
	t.Run("input fails", func(t *testing.T) {
		r := io.MultiReader(strings.NewReader("new"), errReader{errors.New("disk on fire")})
		_, err := c.WriteFile(t.Context(), root, "f", 0, false, r)
		if err == nil || !strings.Contains(err.Error(), "disk on fire") {
			t.Fatalf("WriteFile = %v, want the input's error", err)
		}
		checkUntouched(t, root)
	})
	t.Run("missing parent", func(t *testing.T) {
		_, err := c.WriteFile(t.Context(), root, "no/such/dir/f", 0, false, strings.NewReader("x"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("WriteFile without parents = %v, want fs.ErrNotExist", err)
		}
	})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// checkUntouched waits until the guest has cleaned up after a failed write, then checks
// that f still has its old content and that no temporary file is left.
func checkUntouched(t *testing.T, root string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 1 && entries[0].Name() == "f" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the root holds %v, want only f", entries)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if b, err := os.ReadFile(filepath.Join(root, "f")); err != nil || string(b) != "old content" {
		t.Errorf("f = %q, %v; want the old content", b, err)
	}
}

func TestStatListRemoveMkdir(t *testing.T) {
	c, _ := guesttest.Connect(t)
	root := t.TempDir()
	ctx := t.Context()
	writeFile(t, filepath.Join(root, "d/file"), "12345", 0o600)
	if err := os.Symlink("file", filepath.Join(root, "d/link")); err != nil {
		t.Fatal(err)
	}
	if err := c.Mkdir(ctx, root, "d/sub", 0o700, false); err != nil {
		t.Fatal(err)
	}

	fi, err := c.Stat(ctx, root, "d/file")
	if err != nil || fi.GetType() != "file" || fi.GetSize() != 5 || fi.GetMode() != 0o600 || fi.GetName() != "file" {
		t.Errorf("Stat(file) = %v, %v", fi, err)
	}
	fi, err = c.Stat(ctx, root, "d/link")
	if err != nil || fi.GetType() != "symlink" || fi.GetLink() != "file" {
		t.Errorf("Stat(link) = %v, %v; want a symlink to file", fi, err)
	}
	fi, err = c.Stat(ctx, root, "")
	if err != nil || fi.GetType() != "dir" || fi.GetName() != filepath.Base(root) {
		t.Errorf("Stat(root) = %v, %v", fi, err)
	}

	entries, err := c.List(ctx, root, "d")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.GetName()+":"+e.GetType())
	}
	if want := "file:file link:symlink sub:dir"; strings.Join(got, " ") != want {
		t.Errorf("List = %q, want %q", strings.Join(got, " "), want)
	}
	if fi, err := os.Stat(filepath.Join(root, "d/sub")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("Mkdir made %v, %v; want mode 0700", fi.Mode(), err)
	}

	errTests := []struct {
		name string
		err  error
		want error
	}{
		{"stat missing", func() error { _, err := c.Stat(ctx, root, "nope"); return err }(), fs.ErrNotExist},
		{"list missing", func() error { _, err := c.List(ctx, root, "nope"); return err }(), fs.ErrNotExist},
		{"read missing", func() error { _, err := c.ReadFile(ctx, root, "nope", io.Discard); return err }(), fs.ErrNotExist},
		{"mkdir existing", c.Mkdir(ctx, root, "d/sub", 0, false), fs.ErrExist},
		{"mkdir without parents", c.Mkdir(ctx, root, "x/y/z", 0, false), fs.ErrNotExist},
		{"remove missing", c.Remove(ctx, root, "nope", false), fs.ErrNotExist},
		{"root outside", func() error { _, err := c.Stat(ctx, root, "/etc/passwd"); return err }(), guestclient.ErrPathEscapes},
		{"dot dot", func() error { _, err := c.Stat(ctx, root, "../x"); return err }(), guestclient.ErrPathEscapes},
	}
	for _, tt := range errTests {
		if !errors.Is(tt.err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, tt.err, tt.want)
		}
	}
	_, err = c.ReadFile(ctx, root, "nope", io.Discard)
	if want := "open " + filepath.Join(root, "nope") + ": file does not exist"; err == nil || err.Error() != want {
		t.Errorf("error message %q, want %q", err, want)
	}

	if err := c.Mkdir(ctx, root, "x/y/z", 0, true); err != nil {
		t.Errorf("Mkdir with parents: %v", err)
	}
	if err := c.Mkdir(ctx, root, "x/y/z", 0, true); err != nil {
		t.Errorf("Mkdir with parents on an existing directory: %v", err)
	}
	if err := c.Remove(ctx, root, "x", false); err == nil {
		t.Error("non-recursive Remove of a non-empty directory succeeded")
	}
	if err := c.Remove(ctx, root, "x", true); err != nil {
		t.Errorf("recursive Remove: %v", err)
	}
	if err := c.Remove(ctx, root, "d/link", false); err != nil {
		t.Errorf("Remove(link): %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "d/file")); err != nil {
		t.Errorf("removing a link removed its target: %v", err)
	}
	if err := c.Remove(ctx, root, "", true); err == nil {
		t.Error("Remove of the root succeeded")
	}
	if _, err := os.Stat(filepath.Join(root, "x")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("x still exists after Remove: %v", err)
	}
}

// TestSymlinkEscape plants links out of the root and checks that no call follows them
// out.
func TestSymlinkEscape(t *testing.T) {
	c, _ := guesttest.Connect(t)
	ctx := t.Context()
	root, outside := jail(t)
	writeFile(t, filepath.Join(outside, "canary"), "canary", 0o644)
	mustSymlink(t, "/etc", filepath.Join(root, "evil"))
	mustSymlink(t, "../../..", filepath.Join(root, "evil2"))
	mustSymlink(t, outside, filepath.Join(root, "evil3"))
	mustSymlink(t, "../../../canary", filepath.Join(root, "canarylink"))

	calls := []struct {
		name string
		call func() error
	}{
		{"read through absolute link", func() error { _, err := c.ReadFile(ctx, root, "evil/passwd", io.Discard); return err }},
		{"read through relative link", func() error { _, err := c.ReadFile(ctx, root, "evil2/canary", io.Discard); return err }},
		{"read a link to outside", func() error { _, err := c.ReadFile(ctx, root, "canarylink", io.Discard); return err }},
		{"write through link", func() error {
			_, err := c.WriteFile(ctx, root, "evil3/new", 0, false, strings.NewReader("x"))
			return err
		}},
		{"write with parents through link", func() error {
			_, err := c.WriteFile(ctx, root, "evil2/sub/new", 0, true, strings.NewReader("x"))
			return err
		}},
		{"stat through link", func() error { _, err := c.Stat(ctx, root, "evil/passwd"); return err }},
		{"list through absolute link", func() error { _, err := c.List(ctx, root, "evil/ssl"); return err }},
		{"list through relative link", func() error { _, err := c.List(ctx, root, "evil2/a"); return err }},
		{"remove through link", func() error { return c.Remove(ctx, root, "evil3/canary", false) }},
		{"remove recursive through link", func() error { return c.Remove(ctx, root, "evil2/canary", true) }},
		{"mkdir through link", func() error { return c.Mkdir(ctx, root, "evil3/d", 0, true) }},
		{"tar out through link", func() error { return c.TarOut(ctx, root, "evil2/canary", io.Discard) }},
		{"tar in through link", func() error {
			_, _, err := c.TarIn(ctx, root, "evil3/x", tarOf(t, tarEntry{name: "f", body: "x"}))
			return err
		}},
		{"tar entry through existing link", func() error {
			_, _, err := c.TarIn(ctx, root, ".", tarOf(t, tarEntry{name: "evil3/f", body: "x"}))
			return err
		}},
		{"tar entry through its own link", func() error {
			_, _, err := c.TarIn(ctx, root, "t1", tarOf(t,
				tarEntry{name: "l", link: outside}, tarEntry{name: "l/f", body: "x"}))
			return err
		}},
		{"tar entry through its own relative link", func() error {
			_, _, err := c.TarIn(ctx, root, "t2", tarOf(t,
				tarEntry{name: "l", link: "../../../.."}, tarEntry{name: "l/f", body: "x"}))
			return err
		}},
		{"tar entry with dot dot", func() error {
			_, _, err := c.TarIn(ctx, root, "t3", tarOf(t, tarEntry{name: "../../f", body: "x"}))
			return err
		}},
		{"tar entry absolute", func() error {
			_, _, err := c.TarIn(ctx, root, "t4", tarOf(t, tarEntry{name: filepath.Join(outside, "f"), body: "x"}))
			return err
		}},
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, guestclient.ErrPathEscapes) {
				t.Errorf("err = %v, want ErrPathEscapes", err)
			}
		})
	}

	// Nothing outside changed.
	if b, err := os.ReadFile(filepath.Join(outside, "canary")); err != nil || string(b) != "canary" {
		t.Errorf("canary = %q, %v", b, err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 2 { // canary and a
		t.Errorf("outside holds %v, want canary and a only", entries)
	}
	// Links themselves can be looked at and removed.
	if fi, err := c.Stat(ctx, root, "evil"); err != nil || fi.GetType() != "symlink" || fi.GetLink() != "/etc" {
		t.Errorf("Stat(evil) = %v, %v", fi, err)
	}
	if l, err := c.List(ctx, root, "evil"); err != nil || len(l) != 1 || l[0].GetType() != "symlink" {
		t.Errorf("List(evil) = %v, %v; want the link itself", l, err)
	}
	if err := c.Remove(ctx, root, "evil3", false); err != nil {
		t.Errorf("Remove(evil3): %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("removing the link removed its target: %v", err)
	}
}

func mustSymlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}
