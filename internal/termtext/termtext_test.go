package termtext

import (
	"testing"
	"time"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, tabs\tand\nnewlines": "plain text, tabs\tand\nnewlines",
		"\x1b]0;pwned\x07title":           `\x1b]0;pwned\x07title`,
		"clear\x1b[2J\rfake prompt $ ":    `clear\x1b[2J\x0dfake prompt $ `,
		"c1 \u009b31m csi":                `c1 \x9b31m csi`,
		"del\x7f and nul\x00":             `del\x7f and nul\x00`,
		"unicode: é ✓ 日本":                 "unicode: é ✓ 日本",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
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
