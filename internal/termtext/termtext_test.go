package termtext

import "testing"

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
