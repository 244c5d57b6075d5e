package storage

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/hostdisk"
	"golang.org/x/sys/unix"
)

func TestDir(t *testing.T) {
	t.Parallel()
	testStore(t, func(t *testing.T) backend {
		root := filepath.Join(t.TempDir(), "store")
		d, err := NewDir(root)
		if err != nil {
			t.Fatal(err)
		}
		return backend{store: d, overwrite: func(t *testing.T, key string, data []byte) {
			p := filepath.Join(root, filepath.FromSlash(key))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}}
	})
}

func TestDirPrivate(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "store")
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	put(t, t.Context(), d, "snapshots/web/1.json", "{}")
	for p, want := range map[string]os.FileMode{
		root: 0o700, filepath.Join(root, "snapshots", "web"): 0o700, filepath.Join(root, "snapshots", "web", "1.json"): 0o600,
	} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %04o, want %04o", p, fi.Mode().Perm(), want)
		}
	}
}

// A symbolic link planted inside the store (by whoever could write it) never leads a
// Put, Get, Stat, List or Delete outside it.
func TestDirSymlinksLeadNowhere(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("outside the store"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "store")
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "snapshots", "web"), 0o700); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"abs":                      outside,
		"rel":                      relTo(t, root, outside),
		"snapshots/web/abs.json":   secret,
		"snapshots/web/rel.json":   relTo(t, filepath.Join(root, "snapshots", "web"), secret),
		"snapshots/web/blobs-link": "../../../",
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	// The relative links do reach the outside directory when followed.
	if data, err := os.ReadFile(filepath.Join(root, "snapshots", "web", "rel.json")); err != nil || string(data) != "outside the store" {
		t.Fatalf("the planted relative link does not lead outside (%q, %v): fix the test", data, err)
	}

	for _, key := range []string{"abs/secret", "rel/secret", "snapshots/web/abs.json", "snapshots/web/rel.json", "snapshots/web/blobs-link/x"} {
		if rc, err := d.Get(ctx, key); err == nil {
			rc.Close()
			t.Errorf("Get(%s) followed a link out of the store", key)
		}
		if n, err := d.Stat(ctx, key); err == nil {
			t.Errorf("Stat(%s) = %d followed a link out of the store", key, n)
		}
	}
	for _, key := range []string{"abs/new", "rel/new", "abs/secret", "snapshots/web/blobs-link/new"} {
		if err := d.Put(ctx, key, strings.NewReader("planted"), 7); err == nil {
			t.Errorf("Put(%s) wrote through a link out of the store", key)
		}
	}
	// Put over a link replaces the link, not what it points to.
	put(t, ctx, d, "snapshots/web/abs.json", "replaced")
	if err := d.Delete(ctx, "snapshots/web/rel.json"); err != nil {
		t.Fatal(err)
	}
	if got := list(t, ctx, d, ""); !slices.Equal(got, []string{"snapshots/web/abs.json"}) {
		t.Errorf("List = %q, want only the object Put made (links are no objects)", got)
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the directory outside the store holds %d files, want only its secret", len(entries))
	}
	if data, err := os.ReadFile(secret); err != nil || string(data) != "outside the store" {
		t.Errorf("the file outside the store now holds %q (%v)", data, err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "snapshots", "web", "abs.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("Put over a link left %v (%v), want a regular file", fi, err)
	}
}

// relTo is target relative to directory dir.
func relTo(t *testing.T, dir, target string) string {
	t.Helper()
	rel, err := filepath.Rel(dir, target)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// Temporary files of Puts cut off by a crash are never listed, and Clean removes the
// old ones.
func TestDirClean(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root := t.TempDir()
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	put(t, ctx, d, "blobs/sha256/ab/abcd", "kept")
	stale := filepath.Join(root, "blobs", "sha256", "ab", tmpPrefix+"crashed")
	fresh := filepath.Join(root, "blobs", tmpPrefix+"under-way")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if got := list(t, ctx, d, ""); !slices.Equal(got, []string{"blobs/sha256/ab/abcd"}) {
		t.Errorf("List = %q, want no temporary file", got)
	}
	n, err := d.Clean(ctx, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("Clean = %d, %v; want 1 removed", n, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stale temporary file is still there (%v)", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("Clean removed the temporary file of a Put under way: %v", err)
	}
	if got := get(t, ctx, d, "blobs/sha256/ab/abcd"); got != "kept" {
		t.Errorf("Clean touched an object: %q", got)
	}
}

func TestOpenDir(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	homeDir := func() (string, error) { return home, nil }
	for _, tc := range []struct{ where, want string }{
		{"~/backups", filepath.Join(home, "backups")},
		{"~", home},
		{filepath.Join(home, "abs"), filepath.Join(home, "abs")},
	} {
		s, err := open(context.Background(), tc.where, S3Options{}, homeDir)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(*Dir); !ok || s.String() != tc.want {
			t.Errorf("Open(%q) = %T %s, want the directory %s", tc.where, s, s, tc.want)
		}
		if _, err := os.Stat(tc.want); err != nil {
			t.Errorf("Open(%q) did not create the directory: %v", tc.where, err)
		}
	}
	if _, err := Open(context.Background(), "s3://", S3Options{}); err == nil || !strings.Contains(err.Error(), "no bucket") {
		t.Errorf("Open(s3://): %v, want an error saying there is no bucket", err)
	}
}

// TestDirStopsBeforeTheDiskIsFull: a snapshot of a sandbox whose commits are larger than
// the store's disk can take (16 MiB into an 8 MiB filesystem) fails with ErrNoRoom,
// streamed or announced, and leaves the disk as free as it was; what fits is stored.
func TestDirStopsBeforeTheDiskIsFull(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem for the store needs root")
	}
	small := t.TempDir()
	if err := unix.Mount("tmpfs", small, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(small, unix.MNT_DETACH) })
	d, err := NewDir(filepath.Join(small, "store"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	room := hostdisk.Room(small)
	big := bytes.Repeat([]byte("x"), 16<<20)
	for _, size := range []int64{-1, int64(len(big))} {
		err := d.Put(ctx, "blobs/big", bytes.NewReader(big), size)
		if !errors.Is(err, ErrNoRoom) {
			t.Fatalf("Put of 16 MiB (size %d) into an 8 MiB filesystem: %v, want ErrNoRoom", size, err)
		}
		if after := hostdisk.Room(small); after != room {
			t.Fatalf("room after the refused Put (size %d): %d, before %d: a partial file was left", size, after, room)
		}
	}
	if err := d.Put(ctx, "blobs/small", bytes.NewReader(big[:1<<20]), -1); err != nil {
		t.Fatalf("Put of 1 MiB: %v", err)
	}
}
