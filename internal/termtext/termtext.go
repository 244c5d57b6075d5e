// Package termtext makes text that came from a sandbox safe to print on the user's
// terminal. A commit subject, a file name or an agent's answer can hold control
// characters: an escape sequence that rewrites the screen, retitles the window, fakes a
// prompt or, on some terminals, answers back as if typed. Escape shows each as \xNN.
package termtext

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Escape returns s with every control character but newline and tab written as \xNN
// (C0, DEL and the C1 range, whose 0x9b starts a sequence just as ESC [ does), and so
// is every byte that is not part of valid UTF-8: a lone 0x9b is a CSI to a terminal
// that reads bytes as Latin-1.
func Escape(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case isControl(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean reports whether s is valid UTF-8 without a control character but newline and
// tab, so Escape would return it unchanged.
func clean(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if isControl(rune(c)) {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || isControl(r) {
			return false
		}
		i += size
	}
	return true
}

// Writer escapes what is written through it as Escape does, as it goes: for output too
// large to hold, such as a diff of a sandbox's files. A character split between two
// writes is escaped as a whole; Flush writes the end of one that never completed.
type Writer struct {
	w       io.Writer
	pending []byte // the start of a character the next write may complete
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p escaped, holding back a character p ends in the middle of.
func (e *Writer) Write(p []byte) (int, error) {
	buf := p
	if len(e.pending) > 0 {
		buf = append(e.pending, p...)
	}
	cut := len(buf)
	for i := len(buf) - 1; i >= 0 && i > len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	e.pending = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(e.w, Escape(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes, escaped, the bytes of a character that a write began and none completed.
func (e *Writer) Flush() error {
	if len(e.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(e.w, Escape(string(e.pending)))
	e.pending = nil
	return err
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

// Cost is an estimated cost of model calls for people, "~$1.23" ("~" says it is an
// estimate): "-" for no request recorded, "?" when no request had a known price, "+?"
// after a sum that some of them lacked.
func Cost(requests, unpriced int64, usd float64) string {
	switch {
	case requests == 0:
		return "-"
	case unpriced == requests:
		return "?"
	case usd > 0 && usd < 0.01:
		return "~<$0.01"
	}
	c := fmt.Sprintf("~$%.2f", usd)
	if unpriced > 0 {
		c += "+?"
	}
	return c
}
