// Package limitbuf collects what a sandbox sends (a file, a command's output) in memory
// up to a limit, and refuses the rest with an error: the sandbox chooses how much it
// sends (a sparse file of 64 GiB costs it nothing), the daemon must not hold it all, and
// what is cut short must never pass for the whole.
package limitbuf

import "fmt"

// Buffer is an io.Writer that keeps what is written to it, up to Max bytes. A Write that
// would take it past Max writes nothing and fails with a *TooLargeError; so does every
// Write after it. It never holds more than Max bytes, nor allocates room for more. It
// is not safe for concurrent use.
type Buffer struct {
	Max int

	buf  []byte
	full bool
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	n := len(b.buf) + len(p)
	if b.full || n > b.Max {
		b.full = true
		return 0, &TooLargeError{Max: b.Max}
	}
	if n > cap(b.buf) {
		grown := make([]byte, len(b.buf), min(max(2*cap(b.buf), n, 512), b.Max))
		copy(grown, b.buf)
		b.buf = grown
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// Bytes returns what was written, before a Write that failed.
func (b *Buffer) Bytes() []byte { return b.buf }

// String returns what was written, before a Write that failed.
func (b *Buffer) String() string { return string(b.buf) }

// TooLargeError is what a Buffer's Write returns once its limit is passed. Wrap it with
// what was read: "transcript X: over the limit of 256 MiB".
type TooLargeError struct {
	Max int
}

func (e *TooLargeError) Error() string { return "over the limit of " + size(e.Max) }

// size is n bytes as a limit is usually chosen: in whole MiB or KiB where it is one.
func size(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
