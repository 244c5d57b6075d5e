// Package tailbuf keeps the last bytes written to a writer: a command's standard error,
// for the message that says why it failed, without holding all of a chatty one.
package tailbuf

import (
	"strings"
	"sync"
)

// DefaultMax is what a Buffer keeps when its Max is 0.
const DefaultMax = 4 << 10

// Buffer is an io.Writer that keeps the last Max bytes written to it. Its zero value is
// ready to use; it is safe for concurrent use.
type Buffer struct {
	Max int

	mu  sync.Mutex
	buf []byte
}

// Write implements io.Writer; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	max := b.Max
	if max <= 0 {
		max = DefaultMax
	}
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns what is kept.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Lines returns the last n lines of what is kept, blank lines around it trimmed.
func (b *Buffer) Lines(n int) string {
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
