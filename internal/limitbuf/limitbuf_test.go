package limitbuf

import (
	"errors"
	"strings"
	"testing"
)

// TestBuffer: what fits is kept whole; what would pass the limit is refused, and so is
// everything after it, without the buffer ever holding or allocating more than Max.
func TestBuffer(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string // kept
		full   bool   // a write was refused
	}{
		{"under the limit", 10, []string{"abc", "def"}, "abcdef", false},
		{"exactly the limit", 6, []string{"abc", "def"}, "abcdef", false},
		{"one byte over", 5, []string{"abc", "def"}, "abc", true},
		{"nothing after a refusal, even what would fit", 5, []string{"abc", "def", "g"}, "abc", true},
		{"one write over", 4, []string{"abcdef"}, "", true},
	}
	for _, tt := range tests {
		b := &Buffer{Max: tt.max}
		var err error
		for _, w := range tt.writes {
			n, werr := b.Write([]byte(w))
			if werr == nil && n != len(w) {
				t.Errorf("%s: wrote %d of %d bytes without an error", tt.name, n, len(w))
			}
			if werr != nil {
				err = werr
			}
		}
		var tooLarge *TooLargeError
		if got := errors.As(err, &tooLarge); got != tt.full || b.String() != tt.want {
			t.Errorf("%s: kept %q, err %v; want %q, refused %v", tt.name, b.String(), err, tt.want, tt.full)
		}
	}
}

// TestBufferNeverAllocatesPastMax: an endless stream of small writes grows the buffer
// up to its limit and no further.
func TestBufferNeverAllocatesPastMax(t *testing.T) {
	const max = 1<<20 + 3
	b := &Buffer{Max: max}
	chunk := []byte(strings.Repeat("x", 1000))
	for range 2 * max / len(chunk) {
		if _, err := b.Write(chunk); err != nil {
			break
		}
	}
	if len(b.Bytes()) > max || cap(b.Bytes()) > max {
		t.Fatalf("holds %d bytes in %d, limit %d", len(b.Bytes()), cap(b.Bytes()), max)
	}
	if _, err := b.Write(nil); err == nil {
		t.Fatal("an endless stream was never refused")
	}
}

func TestTooLargeErrorSaysTheLimit(t *testing.T) {
	for max, want := range map[int]string{256 << 20: "256 MiB", 64 << 10: "64 KiB", 1000: "1000 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := (&TooLargeError{Max: max}).Error(); !strings.HasSuffix(got, " "+want) {
			t.Errorf("limit %d: %q, want it to end in %q", max, got, want)
		}
	}
}
