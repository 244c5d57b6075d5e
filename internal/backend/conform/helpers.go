package conform

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"time"
)

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func ioPipe() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }

// waitFor waits until the buffer holds want, failing after 20 seconds.
func waitFor(t T, b *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q; output so far %q", want, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
