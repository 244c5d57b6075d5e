package termtext

import (
	"strings"
	"testing"
	"time"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, tabs\tand\nnewlines": "plain text, tabs\tand\nnewlines",
		"\x1b]0;pwned\x07title":           `\x1b]0;pwned\x07title`,
		"clear\x1b[2J\rfake prompt $ ":    `clear\x1b[2J\x0dfake prompt $ `,
		"c1 \u009b31m csi":                `c1 \x9b31m csi`,
		"raw c1 \x9b31m csi, \x9d0;t\x07": `raw c1 \x9b31m csi, \x9d0;t\x07`,
		"only raw c1: \x9b2J":             `only raw c1: \x9b2J`,
		"cut utf-8: \xe6\x97 end":         `cut utf-8: \xe6\x97 end`,
		"del\x7f and nul\x00":             `del\x7f and nul\x00`,
		"unicode: é ✓ 日本":                 "unicode: é ✓ 日本",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWriter(t *testing.T) {
	for _, in := range []string{
		"+日本 ✓ plain\n-tab\there\n",
		"+\x1b]0;pwned\x07 \x9b2J \u009b31m\r\n",
		"cut at the end: \xe6\x97",
		"\xf0\x9f\x98\x80 and \xf0\x9f alone \x80\x80\x80\x80",
	} {
		want := Escape(in)
		// Every split of the input into two writes, then one write per byte.
		for i := 0; i <= len(in); i++ {
			var b strings.Builder
			w := NewWriter(&b)
			w.Write([]byte(in[:i]))
			w.Write([]byte(in[i:]))
			w.Flush()
			if b.String() != want {
				t.Errorf("%q written as %q, %q: %q, want %q", in, in[:i], in[i:], b.String(), want)
			}
		}
		var b strings.Builder
		w := NewWriter(&b)
		for i := range len(in) {
			if n, err := w.Write([]byte{in[i]}); n != 1 || err != nil {
				t.Fatalf("Write of one byte = %d, %v", n, err)
			}
		}
		w.Flush()
		if b.String() != want {
			t.Errorf("%q written a byte at a time: %q, want %q", in, b.String(), want)
		}
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		45 * time.Second: "45s", 12 * time.Minute: "12m", 3 * time.Hour: "3h", 47 * time.Hour: "47h", 5 * 24 * time.Hour: "5d",
	} {
		if got := Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 20: "3.0 MiB", 5 << 30: "5.0 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
