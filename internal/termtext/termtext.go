// Package termtext makes text that came from a sandbox safe to print on the user's
// terminal. A commit subject, a file name or an agent's answer can hold control
// characters: an escape sequence that rewrites the screen, retitles the window, fakes a
// prompt or, on some terminals, answers back as if typed. Escape shows each as \xNN.
package termtext

import (
	"fmt"
	"strings"
	"time"
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

// Age is a duration the way people read ages in a listing: 45s, 12m, 3h, 5d.
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// Size is a byte count for people: "512 B", "3.4 KiB", "200.0 MiB", "1.2 GiB".
func Size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
