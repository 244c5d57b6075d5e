package guestclient_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
)

// baseline times n runs of f and returns the mean.
func baseline(b *testing.B, n int, f func()) time.Duration {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	start := time.Now()
	for range n {
		f()
	}
	return time.Since(start) / time.Duration(n)
}

// reportRatio reports the mean time per iteration against base.
func reportRatio(b *testing.B, base time.Duration) {
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(per)/float64(base), "x-baseline")
	b.ReportMetric(float64(base.Nanoseconds()), "baseline-ns/op")
}

// BenchmarkExecTrue measures the round trip of running `true` through the guest against
// running it directly with os/exec.
func BenchmarkExecTrue(b *testing.B) {
	c, _ := guesttest.Connect(b)
	ctx := b.Context()
	base := baseline(b, 200, func() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	})
	for b.Loop() {
		if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
			b.Fatal(code, err)
		}
	}
	reportRatio(b, base)
}

const benchFileSize = 64 << 20

// pipeBaseline copies size bytes through an os.Pipe.
func pipeBaseline(b *testing.B, data []byte) func() {
	return func() {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			w.Write(data)
			w.Close()
		}()
		if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(data)) {
			b.Fatal(n, err)
		}
		r.Close()
	}
}

// BenchmarkWriteFile measures a 64 MiB WriteFile against copying it through a pipe.
func BenchmarkWriteFile(b *testing.B) {
	c, _ := guesttest.Connect(b)
	ctx := b.Context()
	root := b.TempDir()
	data := bytes.Repeat([]byte("paddock!"), benchFileSize/8)
	base := baseline(b, 5, pipeBaseline(b, data))
	b.SetBytes(benchFileSize)
	for b.Loop() {
		if _, err := c.WriteFile(ctx, root, "f", 0, false, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	reportRatio(b, base)
}

// BenchmarkReadFile measures a 64 MiB ReadFile against copying it through a pipe.
func BenchmarkReadFile(b *testing.B) {
	c, _ := guesttest.Connect(b)
	ctx := b.Context()
	root := b.TempDir()
	data := bytes.Repeat([]byte("paddock!"), benchFileSize/8)
	if err := os.WriteFile(root+"/f", data, 0o644); err != nil {
		b.Fatal(err)
	}
	base := baseline(b, 5, pipeBaseline(b, data))
	b.SetBytes(benchFileSize)
	for b.Loop() {
		if _, err := c.ReadFile(ctx, root, "f", io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	reportRatio(b, base)
}

// BenchmarkExecOutput measures 64 MiB of a process's output coming back through the
// guest's exec stream against the same process run directly with os/exec, its output
// read through a pipe.
func BenchmarkExecOutput(b *testing.B) {
	c, _ := guesttest.Connect(b)
	ctx := b.Context()
	argv := []string{"head", "-c", fmt.Sprint(benchFileSize), "/dev/zero"}
	base := baseline(b, 5, func() {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout = io.Discard // a pipe, copied by os/exec
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	})
	b.SetBytes(benchFileSize)
	for b.Loop() {
		var out byteCount
		if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: argv, Stdout: &out}); err != nil || code != 0 || out.n != benchFileSize {
			b.Fatal(code, err, out.n)
		}
	}
	reportRatio(b, base)
}

// BenchmarkExecInput measures 64 MiB sent to a process's stdin through the guest's exec
// stream against the same process run directly with os/exec, fed through a pipe.
func BenchmarkExecInput(b *testing.B) {
	c, _ := guesttest.Connect(b)
	ctx := b.Context()
	data := bytes.Repeat([]byte("paddock!"), benchFileSize/8)
	argv := []string{"sh", "-c", "cat > /dev/null"}
	base := baseline(b, 5, func() {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin = bytes.NewReader(data) // a pipe, fed by os/exec
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	})
	b.SetBytes(benchFileSize)
	for b.Loop() {
		if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: argv, Stdin: bytes.NewReader(data)}); err != nil || code != 0 {
			b.Fatal(code, err)
		}
	}
	reportRatio(b, base)
}

// byteCount counts the bytes written to it.
type byteCount struct{ n int64 }

func (c *byteCount) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
