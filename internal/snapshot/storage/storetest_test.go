package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// backend is a store under test with a way past it to its storage.
type backend struct {
	store Store
	// overwrite replaces the object key with data beneath the Store (a file written
	// directly, an object put with the S3 client), as damage or a thief would.
	overwrite func(t *testing.T, key string, data []byte)
}

// testStore runs the behaviour every Store must have against fresh stores from open.
func testStore(t *testing.T, open func(t *testing.T) backend) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, ctx context.Context, b backend)
	}{
		{"put, get, stat, list, delete", func(t *testing.T, ctx context.Context, b backend) {
			s := b.store
			objects := map[string]string{
				"snapshots/web/1.json":   `{"id":1}`,
				"snapshots/web/2.json":   `{"id":2, "more": true}`,
				"snapshots/web-2/1.json": "x",
				"snapshots/api/1.json":   "",
				"blobs/sha256/ab/abc":    strings.Repeat("z", 100_000),
			}
			for k, v := range objects {
				put(t, ctx, s, k, v)
			}
			for k, v := range objects {
				if got := get(t, ctx, s, k); got != v {
					t.Errorf("Get(%s) = %.20q, want %.20q", k, got, v)
				}
				if n, err := s.Stat(ctx, k); err != nil || n != int64(len(v)) {
					t.Errorf("Stat(%s) = %d, %v; want %d", k, n, err, len(v))
				}
			}
			for _, l := range []struct {
				prefix string
				want   []string
			}{
				{"snapshots/web/", []string{"snapshots/web/1.json", "snapshots/web/2.json"}},
				{"snapshots/", []string{"snapshots/api/1.json", "snapshots/web-2/1.json", "snapshots/web/1.json", "snapshots/web/2.json"}},
				{"", []string{"blobs/sha256/ab/abc", "snapshots/api/1.json", "snapshots/web-2/1.json", "snapshots/web/1.json", "snapshots/web/2.json"}},
				{"nothing/here/", nil},
			} {
				if got := list(t, ctx, s, l.prefix); !slices.Equal(got, l.want) {
					t.Errorf("List(%q) = %q, want %q", l.prefix, got, l.want)
				}
			}
			for range 2 { // the second time, deletes a missing object
				if err := s.Delete(ctx, "snapshots/web/1.json"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Stat(ctx, "snapshots/web/1.json"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Stat after Delete: %v, want fs.ErrNotExist", err)
			}
			if got := list(t, ctx, s, "snapshots/web/"); !slices.Equal(got, []string{"snapshots/web/2.json"}) {
				t.Errorf("List after Delete = %q", got)
			}
		}},
		{"put replaces", func(t *testing.T, ctx context.Context, b backend) {
			put(t, ctx, b.store, "a/b", "a longer first version")
			put(t, ctx, b.store, "a/b", "second")
			if got := get(t, ctx, b.store, "a/b"); got != "second" {
				t.Errorf("Get after replacing = %q", got)
			}
			if n, err := b.store.Stat(ctx, "a/b"); err != nil || n != 6 {
				t.Errorf("Stat after replacing = %d, %v", n, err)
			}
		}},
		{"put of unknown size", func(t *testing.T, ctx context.Context, b backend) {
			if err := b.store.Put(ctx, "k", strings.NewReader("unsized"), -1); err != nil {
				t.Fatal(err)
			}
			if got := get(t, ctx, b.store, "k"); got != "unsized" {
				t.Errorf("Get = %q", got)
			}
		}},
		{"a missing object is fs.ErrNotExist", func(t *testing.T, ctx context.Context, b backend) {
			put(t, ctx, b.store, "snapshots/web/1.json", "x")
			for _, k := range []string{"snapshots/web/2.json", "absent", "snapshots/web/1.json/under-an-object"} {
				if _, err := b.store.Get(ctx, k); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Get(%s): %v, want fs.ErrNotExist", k, err)
				}
				if _, err := b.store.Stat(ctx, k); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Stat(%s): %v, want fs.ErrNotExist", k, err)
				}
				if err := b.store.Delete(ctx, k); err != nil {
					t.Errorf("Delete(%s): %v", k, err)
				}
			}
			// A "directory" is no object.
			if _, err := b.store.Stat(ctx, "snapshots/web"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Stat of a prefix: %v, want fs.ErrNotExist", err)
			}
		}},
		{"bad keys are refused", func(t *testing.T, ctx context.Context, b backend) {
			put(t, ctx, b.store, "ok", "x")
			for _, k := range badKeys {
				if err := b.store.Put(ctx, k, strings.NewReader("x"), 1); err == nil {
					t.Errorf("Put(%q) succeeded", k)
				}
				if _, err := b.store.Get(ctx, k); err == nil || errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Get(%q): %v, want a refusal", k, err)
				}
				if _, err := b.store.Stat(ctx, k); err == nil || errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Stat(%q): %v, want a refusal", k, err)
				}
				if err := b.store.Delete(ctx, k); err == nil {
					t.Errorf("Delete(%q) succeeded", k)
				}
			}
			for _, p := range []string{"snapshots", "/snapshots/", "../", "a//", ".tmp/"} {
				if _, err := b.store.List(ctx, p); err == nil {
					t.Errorf("List(%q) succeeded", p)
				}
			}
			if got := list(t, ctx, b.store, ""); !slices.Equal(got, []string{"ok"}) {
				t.Errorf("after refusals the store holds %q", got)
			}
		}},
		{"an interrupted put leaves nothing", func(t *testing.T, ctx context.Context, b backend) {
			put(t, ctx, b.store, "snapshots/web/old.json", "the old version")
			content := strings.Repeat("0123456789", 10_000)
			for _, k := range []string{"snapshots/web/new.json", "snapshots/web/old.json"} {
				for _, size := range []int64{int64(len(content)), -1} {
					r := &failingReader{r: strings.NewReader(content), after: len(content) / 2}
					if err := b.store.Put(ctx, k, r, size); err == nil {
						t.Errorf("Put(%s, size %d) of a reader that failed succeeded", k, size)
					}
				}
				// A file that shrank as it was read; S3's client retries a seekable one
				// (slowly), so the seekable case runs over the old object only.
				var short io.Reader = strings.NewReader(content[:100])
				if k != "snapshots/web/old.json" {
					short = io.MultiReader(short)
				}
				if err := b.store.Put(ctx, k, short, int64(len(content))); err == nil {
					t.Errorf("Put(%s) of a reader that ended early succeeded", k)
				}
				cancelled, cancel := context.WithCancel(ctx)
				cancel()
				if err := b.store.Put(cancelled, k, strings.NewReader(content), int64(len(content))); err == nil {
					t.Errorf("Put(%s) with a cancelled context succeeded", k)
				}
			}
			if _, err := b.store.Stat(ctx, "snapshots/web/new.json"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Stat of the new object after cut-off Puts: %v, want fs.ErrNotExist", err)
			}
			if got := get(t, ctx, b.store, "snapshots/web/old.json"); got != "the old version" {
				t.Errorf("cut-off Puts over an object left %.20q, want the old version", got)
			}
			if got := list(t, ctx, b.store, ""); !slices.Equal(got, []string{"snapshots/web/old.json"}) {
				t.Errorf("after cut-off Puts the store lists %q", got)
			}
		}},
		{"PutBlob uploads content once", func(t *testing.T, ctx context.Context, b backend) {
			s := &countingStore{Store: b.store}
			content := "the content of some file\n"
			sha := sum(content)
			up, err := PutBlob(ctx, s, sha, int64(len(content)), strings.NewReader(content))
			if err != nil || !up {
				t.Fatalf("first PutBlob = %v, %v; want an upload", up, err)
			}
			// The second time, the content is not even read.
			up, err = PutBlob(ctx, s, sha, int64(len(content)), &failingReader{r: strings.NewReader(content)})
			if err != nil || up {
				t.Fatalf("second PutBlob = %v, %v; want no upload", up, err)
			}
			if n := s.puts.Load(); n != 1 {
				t.Errorf("the store saw %d Puts, want 1", n)
			}
			if got := getBlob(t, ctx, s, sha); got != content {
				t.Errorf("GetBlob = %q, want %q", got, content)
			}
			if got := list(t, ctx, s, "blobs/"); !slices.Equal(got, []string{BlobKey(sha)}) {
				t.Errorf("blobs = %q", got)
			}
		}},
		{"PutBlob replaces a blob cut short", func(t *testing.T, ctx context.Context, b backend) {
			content := strings.Repeat("resume ", 1000)
			sha := sum(content)
			b.overwrite(t, BlobKey(sha), []byte(content[:10]))
			up, err := PutBlob(ctx, b.store, sha, int64(len(content)), strings.NewReader(content))
			if err != nil || !up {
				t.Fatalf("PutBlob over a short blob = %v, %v; want an upload", up, err)
			}
			if got := getBlob(t, ctx, b.store, sha); got != content {
				t.Errorf("GetBlob = %.20q", got)
			}
		}},
		{"PutBlob of an empty blob", func(t *testing.T, ctx context.Context, b backend) {
			up, err := PutBlob(ctx, b.store, sum(""), 0, strings.NewReader(""))
			if err != nil || !up {
				t.Fatalf("PutBlob = %v, %v", up, err)
			}
			if got := getBlob(t, ctx, b.store, sum("")); got != "" {
				t.Errorf("GetBlob = %q", got)
			}
		}},
		{"PutBlob refuses content that is not its sha's", func(t *testing.T, ctx context.Context, b backend) {
			content := strings.Repeat("right", 5000)
			sha := sum(content)
			for _, tc := range []struct {
				name string
				body string
				size int64
			}{
				{"same size", strings.Repeat("wrong", 5000), int64(len(content))},
				{"same size, size unknown", strings.Repeat("wrong", 5000), -1},
				{"shorter", content[:100], int64(len(content))},
				{"shorter, size unknown", content[:100], -1},
				{"empty", "", 0},
			} {
				up, err := PutBlob(ctx, b.store, sha, tc.size, strings.NewReader(tc.body))
				if err == nil || up || !strings.Contains(err.Error(), sha) {
					t.Errorf("%s: PutBlob = %v, %v; want an error naming the blob", tc.name, up, err)
				}
				if tc.body != content[:100] && !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s: PutBlob: %v, want ErrCorrupt", tc.name, err)
				}
			}
			if _, err := b.store.Stat(ctx, BlobKey(sha)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after refused PutBlobs, Stat: %v, want fs.ErrNotExist", err)
			}
			if got := list(t, ctx, b.store, ""); len(got) != 0 {
				t.Errorf("after refused PutBlobs the store lists %q", got)
			}
		}},
		{"GetBlob names a corrupt blob", func(t *testing.T, ctx context.Context, b backend) {
			content := strings.Repeat("intact ", 3000)
			sha := sum(content)
			if _, err := PutBlob(ctx, b.store, sha, int64(len(content)), strings.NewReader(content)); err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{strings.Repeat("broken ", 3000), content[:len(content)/2], ""} {
				b.overwrite(t, BlobKey(sha), []byte(bad))
				rc, err := GetBlob(ctx, b.store, sha)
				if err != nil {
					t.Fatal(err)
				}
				_, rerr := io.Copy(io.Discard, rc)
				cerr := rc.Close()
				for what, err := range map[string]error{"Read": rerr, "Close": cerr} {
					if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), sha) {
						t.Errorf("%s of a blob overwritten with %d bytes: %v, want ErrCorrupt naming %s", what, len(bad), err, sha)
					}
				}
			}
			if _, err := GetBlob(ctx, b.store, sum("never stored")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("GetBlob of a missing blob: %v, want fs.ErrNotExist", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, t.Context(), open(t))
		})
	}
}

// badKeys are keys every Store must refuse.
var badKeys = []string{
	"", "/abs", "a/", "a//b", ".", "..", "../x", "a/../b", "a/./b", ".tmp-1", "a/.tmp-x", ".hidden",
	"a\\b", "a b", "a\x00b", "é", "a:b", strings.Repeat("k", MaxKeyLen+1),
}

// countingStore records how many Puts reach the store beneath it.
type countingStore struct {
	Store
	puts atomic.Int32
}

func (c *countingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	c.puts.Add(1)
	return c.Store.Put(ctx, key, r, size)
}

// failingReader reads r until after bytes were read, then fails.
type failingReader struct {
	r     io.Reader
	after int
	n     int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n >= f.after {
		return 0, errors.New("the reader broke")
	}
	if len(p) > f.after-f.n {
		p = p[:f.after-f.n]
	}
	k, err := f.r.Read(p)
	f.n += k
	return k, err
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func put(t *testing.T, ctx context.Context, s Store, key, content string) {
	t.Helper()
	if err := s.Put(ctx, key, strings.NewReader(content), int64(len(content))); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, ctx context.Context, s Store, key string) string {
	t.Helper()
	rc, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, rc)
}

func getBlob(t *testing.T, ctx context.Context, s Store, sha string) string {
	t.Helper()
	rc, err := GetBlob(ctx, s, sha)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, rc)
}

func readAll(t *testing.T, rc io.ReadCloser) string {
	t.Helper()
	var buf bytes.Buffer
	_, err := io.Copy(&buf, rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func list(t *testing.T, ctx context.Context, s Store, prefix string) []string {
	t.Helper()
	keys, err := s.List(ctx, prefix)
	if err != nil {
		t.Fatal(fmt.Errorf("List(%q): %w", prefix, err))
	}
	return keys
}
