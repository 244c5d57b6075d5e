// Package termtext makes text that came from a sandbox safe to print on the user's
// terminal. A commit subject, a file name or an agent's answer can hold control
// characters: an escape sequence that rewrites the screen, retitles the window, fakes a
// prompt or, on some terminals, answers back as if typed. Escape shows each as \xNN.
package termtext

import (
	"fmt"
	"strings"
)

// Escape returns s with every control character but newline and tab written as \xNN
// (C0, DEL and the C1 range, whose 0x9b starts a sequence just as ESC [ does).
func Escape(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r < 0xa0
}
