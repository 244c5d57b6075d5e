package storage

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDirKey: whatever key a manifest names (one from a store someone changed), a Dir
// store either refuses it or keeps the object beneath its root, under that very name, and
// gives it back.
func FuzzDirKey(f *testing.F) {
	for _, seed := range []string{"blobs/sha256/ab/abcd", "snapshots/repo/1.json", "../x", "a/../../b", "/etc/passwd", "a//b", ".tmp-x", "a/.b", "a\x00b", strings.Repeat("a/", 300)} {
		f.Add(seed)
	}
	root := f.TempDir()
	outside := filepath.Join(filepath.Dir(root), "outside")
	os.Mkdir(outside, 0o700)
	// A link planted in the store pointing outside it, as a thief with the disk might.
	os.Symlink(outside, filepath.Join(root, "planted"))
	d, err := NewDir(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string) {
		ctx := context.Background()
		err := d.Put(ctx, key, strings.NewReader("x"), 1)
		if CheckKey(key) != nil {
			if err == nil {
				t.Fatalf("Put took a key CheckKey refuses: %q", key)
			}
			return
		}
		if entries, _ := os.ReadDir(outside); len(entries) > 0 {
			t.Fatalf("key %q wrote outside the store: %v", key, entries)
		}
		if err != nil {
			return // a key that passes through the planted link is refused by os.Root
		}
		r, err := d.Get(ctx, key)
		if err != nil {
			t.Fatalf("Get %q after Put: %v", key, err)
		}
		defer r.Close()
		if b, _ := io.ReadAll(r); !bytes.Equal(b, []byte("x")) {
			t.Fatalf("Get %q = %q", key, b)
		}
		d.Delete(ctx, key)
	})
}
