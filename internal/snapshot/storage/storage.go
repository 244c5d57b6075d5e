// Package storage is where snapshots are kept: an object store behind one small
// interface, Store, with a directory (Dir) and an S3 bucket (S3) behind it, and the
// content-addressed blob helpers (PutBlob, GetBlob) the snapshot code writes file
// contents with.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Store keeps objects by key ("blobs/sha256/ab/abcd...", "snapshots/NAME/ID.json").
// Every method refuses a key CheckKey refuses, since keys may come from a manifest read
// back from the store, which whoever can write the store could have changed. Methods may
// run concurrently, on different keys or the same one.
type Store interface {
	// Put stores r (size bytes, -1 if unknown) under key. The object is visible to
	// Get, Stat and List only once whole: a Put cut off (r fails, ctx ends, the process
	// dies) leaves nothing new under key. Putting an existing key replaces it.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens an object; an error matching fs.ErrNotExist when there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat returns an object's size; an error matching fs.ErrNotExist when there is none.
	Stat(ctx context.Context, key string) (int64, error)
	// List returns the keys under prefix, sorted. prefix is "" (everything) or a
	// "directory" ending in "/", such as "snapshots/web/". Nothing under it is no error.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes an object; deleting a missing one is not an error.
	Delete(ctx context.Context, key string) error
	// String says where the store is, for messages; it never holds a secret.
	String() string
}

// MaxKeyLen is the longest key, in bytes, a Store accepts.
const MaxKeyLen = 512

// CheckKey says why key is not one a Store accepts, or nil when it is: a relative,
// slash-separated path of at most MaxKeyLen bytes whose segments are non-empty and made
// of A-Z, a-z, 0-9, '.', '_' and '-'. A segment may not begin with '.': that refuses
// "." and "..", and leaves names beginning with '.' to the stores themselves (Dir's
// temporary files are ".tmp-*", so no key can name one and List never returns one).
func CheckKey(key string) error {
	switch {
	case key == "":
		return errors.New("empty object key")
	case len(key) > MaxKeyLen:
		return fmt.Errorf("object key %.40q... is %d bytes, more than %d", key, len(key), MaxKeyLen)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" {
			return fmt.Errorf("object key %q: empty segment (a leading, trailing or doubled /)", key)
		}
		if seg[0] == '.' {
			return fmt.Errorf("object key %q: segment %q begins with '.'", key, seg)
		}
		for i := 0; i < len(seg); i++ {
			if !keyByte(seg[i]) {
				return fmt.Errorf("object key %q: byte %q is not one of A-Z a-z 0-9 . _ -", key, seg[i])
			}
		}
	}
	return nil
}

func keyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// checkPrefix checks a List prefix: "" or a valid key followed by "/".
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	dir, ok := strings.CutSuffix(prefix, "/")
	if !ok {
		return fmt.Errorf("list prefix %q must end in /", prefix)
	}
	if err := CheckKey(dir); err != nil {
		return fmt.Errorf("list prefix: %w", err)
	}
	return nil
}

// Open returns the store where names: "s3://BUCKET" or "s3://BUCKET/PREFIX" is an S3
// bucket (its bucket and prefix replace opts', the endpoint, keys and the rest come
// from opts); anything else is a directory path, where a leading "~/" is the user's
// home directory.
func Open(ctx context.Context, where string, opts S3Options) (Store, error) {
	return open(ctx, where, opts, os.UserHomeDir)
}

// open is Open with the user's home directory found by homeDir.
func open(ctx context.Context, where string, opts S3Options, homeDir func() (string, error)) (Store, error) {
	if rest, ok := strings.CutPrefix(where, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, fmt.Errorf("store %q: no bucket after s3://", where)
		}
		opts.Bucket, opts.Prefix = bucket, prefix
		return NewS3(ctx, opts)
	}
	dir, err := expandHome(where, homeDir)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", where, err)
	}
	return NewDir(dir)
}

// expandHome replaces a leading "~" or "~/" with the user's home directory, which
// homeDir finds.
func expandHome(path string, homeDir func() (string, error)) (string, error) {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path, nil
	}
	home, err := homeDir()
	if err != nil {
		return "", fmt.Errorf("expand ~: %w", err)
	}
	return filepath.Join(home, path[1:]), nil
}
