package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
)

// ErrCorrupt says that a blob's content does not hash to its name: it was damaged or
// cut short in the store, or the content offered to PutBlob was not what its sha256
// said.
var ErrCorrupt = errors.New("content does not match its sha256 (corrupt or truncated)")

// CheckSHA256 says why sha is not a sha256 as blobs are named by (64 lowercase hex
// digits), or nil when it is one.
func CheckSHA256(sha string) error {
	if len(sha) != 2*sha256.Size {
		return fmt.Errorf("sha256 %.70q is %d characters, not %d", sha, len(sha), 2*sha256.Size)
	}
	for i := 0; i < len(sha); i++ {
		if c := sha[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("sha256 %q: %q is not a lowercase hex digit", sha, c)
		}
	}
	return nil
}

// BlobKey is the key of the blob whose content has sha256 sha (64 lowercase hex digits):
// "blobs/sha256/" + its first two digits + "/" + sha. For anything but such a sha it
// returns "", a key every Store refuses; CheckSHA256 says what is wrong with it.
func BlobKey(sha string) string {
	if CheckSHA256(sha) != nil {
		return ""
	}
	return "blobs/sha256/" + sha[:2] + "/" + sha
}

// PutBlob stores the content r (size bytes, or -1 when unknown) as the blob named sha,
// unless the store already has that blob at that size (any size, when size is -1): the
// same content is never uploaded twice, and a snapshot interrupted and started again
// skips the blobs it finished. uploaded says whether r was stored. Content that does not
// hash to sha is refused (an error matching ErrCorrupt) before the store makes it
// visible, so nothing is left under the blob's key.
func PutBlob(ctx context.Context, s Store, sha string, size int64, r io.Reader) (uploaded bool, err error) {
	if err := CheckSHA256(sha); err != nil {
		return false, fmt.Errorf("put blob: %w", err)
	}
	key := BlobKey(sha)
	have, err := s.Stat(ctx, key)
	switch {
	case err == nil && (size < 0 || have == size):
		return false, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("put blob %s: %w", sha, err)
	}
	v := &verifier{r: r, h: sha256.New(), sha: sha, size: size}
	if err := s.Put(ctx, key, v, size); err != nil {
		return false, fmt.Errorf("put blob %s in %s: %w", sha, s, err)
	}
	// A store that finished without reading to the end (an empty blob, say) has not
	// let the verifier look at the whole content: look now, and take back a bad one.
	if err := v.finish(); err != nil {
		if derr := s.Delete(ctx, key); derr != nil {
			err = errors.Join(err, fmt.Errorf("remove the bad blob: %w", derr))
		}
		return false, fmt.Errorf("put blob in %s: %w", s, err)
	}
	return true, nil
}

// verifier hashes what a Store reads from r and, at the end of the content, fails
// instead of ending when the content does not hash to sha. It withholds the last bytes
// of known-size content until they check out, so a store never holds the whole of bad
// content, and Put's "a Put cut off leaves nothing" keeps it out of the store.
type verifier struct {
	r    io.Reader
	h    hash.Hash
	sha  string
	size int64 // -1 when unknown
	n    int64
	done bool // the content was checked and found right
	err  error
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if v.done {
		return 0, io.EOF
	}
	if v.size >= 0 && int64(len(p)) > v.size-v.n {
		p = p[:v.size-v.n]
	}
	var k int
	var err error
	if len(p) > 0 || v.size < 0 {
		k, err = v.r.Read(p)
	}
	v.h.Write(p[:k])
	v.n += int64(k)
	switch {
	case v.size >= 0 && v.n == v.size, v.size < 0 && err == io.EOF:
		if v.err = v.finish(); v.err != nil {
			return 0, v.err
		}
		return k, io.EOF
	case err == io.EOF:
		v.err = fmt.Errorf("blob %s: the content ended after %d of %d bytes", v.sha, v.n, v.size)
		return k, v.err
	}
	return k, err
}

// finish checks the content read so far as the whole of it.
func (v *verifier) finish() error {
	if v.done {
		return nil
	}
	if v.size >= 0 && v.n != v.size {
		return fmt.Errorf("blob %s: the store read %d of %d bytes", v.sha, v.n, v.size)
	}
	if got := hex.EncodeToString(v.h.Sum(nil)); got != v.sha {
		return fmt.Errorf("blob %s: the content's sha256 is %s: %w", v.sha, got, ErrCorrupt)
	}
	v.done = true
	return nil
}

// GetBlob opens the blob named sha. Its reader hashes what it reads and, at the end,
// fails with an error naming the blob and matching ErrCorrupt, instead of io.EOF, when
// the content does not hash to sha; Close repeats that error. A blob closed before it
// was read to the end is not checked.
func GetBlob(ctx context.Context, s Store, sha string) (io.ReadCloser, error) {
	if err := CheckSHA256(sha); err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	rc, err := s.Get(ctx, BlobKey(sha))
	if err != nil {
		return nil, fmt.Errorf("get blob %s: %w", sha, err)
	}
	return &checker{rc: rc, h: sha256.New(), sha: sha, where: s.String()}, nil
}

// checker is GetBlob's reader.
type checker struct {
	rc    io.ReadCloser
	h     hash.Hash
	sha   string
	where string
	err   error
}

func (c *checker) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	k, err := c.rc.Read(p)
	c.h.Write(p[:k])
	if err == io.EOF {
		if got := hex.EncodeToString(c.h.Sum(nil)); got != c.sha {
			c.err = fmt.Errorf("blob %s in %s: its content's sha256 is %s: %w", c.sha, c.where, got, ErrCorrupt)
			return k, c.err
		}
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("read blob %s: %w", c.sha, err)
	}
	return k, err
}

// Close closes the blob, returning the mismatch Read reported, if any.
func (c *checker) Close() error {
	if err := c.rc.Close(); err != nil {
		return fmt.Errorf("close blob %s: %w", c.sha, err)
	}
	return c.err
}
