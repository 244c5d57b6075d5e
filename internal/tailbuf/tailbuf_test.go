package tailbuf_test

import (
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/tailbuf"
)

func TestKeepsTheEnd(t *testing.T) {
	b := &tailbuf.Buffer{Max: 8}
	for _, s := range []string{"abc", "defgh", "ijk"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := b.String(); got != "defghijk" {
		t.Errorf("kept %q, want the last 8 bytes", got)
	}
	var z tailbuf.Buffer
	z.Write([]byte(strings.Repeat("x", tailbuf.DefaultMax) + "end"))
	if got := z.String(); len(got) != tailbuf.DefaultMax || !strings.HasSuffix(got, "end") {
		t.Errorf("the zero Buffer kept %d bytes ending %q", len(got), got[len(got)-3:])
	}
}

func TestLines(t *testing.T) {
	var b tailbuf.Buffer
	b.Write([]byte("one\ntwo\nthree\nfour\n\n"))
	if got := b.Lines(2); got != "three\nfour" {
		t.Errorf("Lines(2) = %q", got)
	}
	if got := b.Lines(9); got != "one\ntwo\nthree\nfour" {
		t.Errorf("Lines(9) = %q", got)
	}
}
