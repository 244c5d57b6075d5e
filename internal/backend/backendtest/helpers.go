package backendtest

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
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
func waitFor(t *testing.T, b *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q; output so far %q", want, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ReportRatio reports a benchmark's time per operation, its baseline's, measured in the
// same run, and their ratio: absolute times on a shared machine drift, the ratio much
// less.
func ReportRatio(b *testing.B, ours, baseline time.Duration) {
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(baseline.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(ours)/float64(baseline), "x-baseline")
}
