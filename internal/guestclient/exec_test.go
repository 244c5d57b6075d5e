package guestclient_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
)

func TestExecExitCodes(t *testing.T) {
	c, _ := guesttest.Connect(t)
	tests := []struct {
		name     string
		argv     []string
		want     int
		startErr bool
	}{
		{"success", []string{"true"}, 0, false},
		{"exit code", []string{"sh", "-c", "exit 3"}, 3, false},
		{"killed by SIGKILL", []string{"sh", "-c", "kill -KILL $$"}, 137, false},
		{"killed by SIGTERM", []string{"sh", "-c", "kill -TERM $$"}, 143, false},
		{"not found", []string{"no-such-program-paddock"}, 127, true},
		{"not found by path", []string{"/no/such/program"}, 127, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, err := c.Exec(t.Context(), guestclient.ExecOptions{Argv: tt.argv})
			if code != tt.want {
				t.Errorf("exit code = %d, want %d (err %v)", code, tt.want, err)
			}
			var se *guestclient.ExecStartError
			if got := errors.As(err, &se); got != tt.startErr {
				t.Fatalf("err = %v; want an *ExecStartError: %v", err, tt.startErr)
			}
			if tt.startErr && !strings.Contains(se.Message, tt.argv[0]) {
				t.Errorf("start error %q does not name %q", se.Message, tt.argv[0])
			}
		})
	}
}

// recorder keeps the order in which writes reach stdout and stderr.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) writer(tag string) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, tag+":"+string(p))
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestExecOutput(t *testing.T) {
	c, _ := guesttest.Connect(t)
	dir := t.TempDir()

	t.Run("stdout and stderr apart, in order", func(t *testing.T) {
		var rec recorder
		script := "printf o1; sleep 0.05; printf e1 >&2; sleep 0.05; printf o2; sleep 0.05; printf e2 >&2"
		code, err := c.Exec(t.Context(), guestclient.ExecOptions{
			Argv: []string{"sh", "-c", script}, Stdout: rec.writer("out"), Stderr: rec.writer("err"),
		})
		if err != nil || code != 0 {
			t.Fatalf("exec: %d, %v", code, err)
		}
		want := []string{"out:o1", "err:e1", "out:o2", "err:e2"}
		if fmt.Sprint(rec.events) != fmt.Sprint(want) {
			t.Errorf("output = %q, want %q", rec.events, want)
		}
	})

	t.Run("env and dir", func(t *testing.T) {
		var out bytes.Buffer
		_, err := c.Exec(t.Context(), guestclient.ExecOptions{
			Argv: []string{"sh", "-c", `echo "$PADDOCK_TEST"; pwd`}, Env: []string{"PADDOCK_TEST=hello"},
			Dir: dir, Stdout: &out,
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := "hello\n" + dir + "\n"; out.String() != want {
			t.Errorf("output = %q, want %q", out.String(), want)
		}
	})

	t.Run("default dir", func(t *testing.T) {
		want := "/workspace\n"
		if _, err := os.Stat("/workspace"); err != nil {
			want = "/\n"
		}
		var out bytes.Buffer
		if _, err := c.Exec(t.Context(), guestclient.ExecOptions{Argv: []string{"pwd"}, Stdout: &out}); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("pwd = %q, want %q", out.String(), want)
		}
	})

	t.Run("stdin echoed by cat", func(t *testing.T) {
		in := make([]byte, 3<<20+17)
		rand.Read(in)
		var out bytes.Buffer
		code, err := c.Exec(t.Context(), guestclient.ExecOptions{
			Argv: []string{"cat"}, Stdin: bytes.NewReader(in), Stdout: &out,
		})
		if err != nil || code != 0 {
			t.Fatalf("exec: %d, %v", code, err)
		}
		if !bytes.Equal(out.Bytes(), in) {
			t.Errorf("cat returned %d bytes, want the %d sent", out.Len(), len(in))
		}
	})

	t.Run("no stdin", func(t *testing.T) {
		code, err := c.Exec(t.Context(), guestclient.ExecOptions{Argv: []string{"cat"}})
		if err != nil || code != 0 {
			t.Fatalf("cat without stdin: %d, %v", code, err)
		}
	})

	t.Run("large output complete", func(t *testing.T) {
		const size = 10 << 20
		var out countingWriter
		code, err := c.Exec(t.Context(), guestclient.ExecOptions{
			Argv: []string{"sh", "-c", fmt.Sprintf("yes 0123456789abcdef | head -c %d", size)}, Stdout: &out,
		})
		if err != nil || code != 0 {
			t.Fatalf("exec: %d, %v", code, err)
		}
		if out.n != size || out.bad {
			t.Errorf("got %d bytes (corrupt: %v), want %d", out.n, out.bad, size)
		}
	})

	t.Run("background child keeps stdout open", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		var out bytes.Buffer
		code, err := c.Exec(ctx, guestclient.ExecOptions{
			Argv: []string{"sh", "-c", "sleep 30 & echo started"}, Stdout: &out,
		})
		if err != nil || code != 0 || out.String() != "started\n" {
			t.Errorf("exec = %d, %v, output %q", code, err, out.String())
		}
	})
}

// countingWriter counts bytes and checks that they repeat "0123456789abcdef\n".
type countingWriter struct {
	n   int
	bad bool
}

func (w *countingWriter) Write(p []byte) (int, error) {
	const line = "0123456789abcdef\n"
	for i, b := range p {
		if line[(w.n+i)%len(line)] != b {
			w.bad = true
		}
	}
	w.n += len(p)
	return len(p), nil
}

func TestExecSignals(t *testing.T) {
	c, _ := guesttest.Connect(t)
	tests := []struct {
		name string
		tty  bool
		sig  syscall.Signal
		want int
	}{
		{"pipes SIGTERM", false, syscall.SIGTERM, 143},
		{"pipes SIGKILL", false, syscall.SIGKILL, 137},
		{"tty SIGINT", true, syscall.SIGINT, 130},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sigs := make(chan syscall.Signal, 1)
			sigs <- tt.sig
			code, err := c.Exec(t.Context(), guestclient.ExecOptions{
				Argv: []string{"sleep", "30"}, TTY: tt.tty, Signal: sigs,
			})
			if err != nil || code != tt.want {
				t.Errorf("exec = %d, %v; want %d", code, err, tt.want)
			}
		})
	}

	t.Run("signal reaches the whole group", func(t *testing.T) {
		sigs := make(chan syscall.Signal)
		out := newWatcher("ready")
		done := make(chan int)
		go func() {
			code, _ := c.Exec(t.Context(), guestclient.ExecOptions{
				Argv:   []string{"sh", "-c", "sleep 30 & echo ready; wait; echo survived"},
				Stdout: out, Signal: sigs,
			})
			done <- code
		}()
		out.wait(t)
		sigs <- syscall.SIGTERM
		if code := <-done; code != 143 {
			t.Errorf("exit code = %d, want 143; output %q", code, out.String())
		}
	})
}

func TestExecCancelKillsProcess(t *testing.T) {
	c, _ := guesttest.Connect(t)
	ctx, cancel := context.WithCancel(t.Context())
	out := newWatcher("\n")
	done := make(chan error)
	go func() {
		_, err := c.Exec(ctx, guestclient.ExecOptions{
			Argv: []string{"sh", "-c", "echo $$; exec sleep 30"}, Stdout: out,
		})
		done <- err
	}()
	out.wait(t)
	var pid int
	if _, err := fmt.Sscan(out.String(), &pid); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Exec after cancel = %v, want context.Canceled", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after the call was cancelled", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExecTTY(t *testing.T) {
	c, _ := guesttest.Connect(t)

	t.Run("initial size", func(t *testing.T) {
		var out bytes.Buffer
		code, err := c.Exec(t.Context(), guestclient.ExecOptions{
			Argv: []string{"stty", "size"}, TTY: true, Size: guestclient.Size{Rows: 33, Cols: 101}, Stdout: &out,
		})
		if err != nil || code != 0 {
			t.Fatalf("exec: %d, %v", code, err)
		}
		if got := strings.TrimSpace(out.String()); got != "33 101" {
			t.Errorf("stty size = %q, want 33 101", got)
		}
	})

	t.Run("resize", func(t *testing.T) {
		inR, inW := io.Pipe()
		defer inW.Close()
		resize := make(chan guestclient.Size, 1)
		out := newWatcher("24 80")
		done := make(chan error, 1)
		go func() {
			code, err := c.Exec(t.Context(), guestclient.ExecOptions{
				Argv: []string{"sh", "-c", "stty size; while read x; do stty size; done; exit 4"},
				TTY:  true, Size: guestclient.Size{Rows: 24, Cols: 80},
				Stdin: inR, Stdout: out, Resize: resize,
			})
			if err == nil && code != 4 {
				err = fmt.Errorf("exit code %d, want 4", code)
			}
			done <- err
		}()
		out.wait(t)
		resize <- guestclient.Size{Rows: 40, Cols: 120}
		// The resize and the input travel separately; ask until the new size shows.
		resized := out.expect("40 120")
		for i := 0; ; i++ {
			if _, err := inW.Write([]byte("\n")); err != nil {
				t.Fatal(err)
			}
			select {
			case <-resized:
			case <-time.After(50 * time.Millisecond):
				if i < 200 {
					continue
				}
				t.Fatalf("size never changed; output %q", out.String())
			}
			break
		}
		inW.Write([]byte{4}) // ^D at the start of a line ends read
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// watcher is an io.Writer that lets a test wait for some output.
type watcher struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	waits map[string]chan struct{}
	first <-chan struct{}
}

func newWatcher(s string) *watcher {
	w := &watcher{waits: map[string]chan struct{}{}}
	w.first = w.expect(s)
	return w
}

// expect returns a channel closed once the output contains s.
func (w *watcher) expect(s string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	w.waits[s] = ch
	w.check()
	return ch
}

func (w *watcher) check() {
	for s, ch := range w.waits {
		if strings.Contains(w.buf.String(), s) {
			close(ch)
			delete(w.waits, s)
		}
	}
}

func (w *watcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.check()
	return len(p), nil
}

func (w *watcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// wait waits for the string given to newWatcher.
func (w *watcher) wait(t *testing.T) {
	t.Helper()
	select {
	case <-w.first:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out; output so far %q", w.String())
	}
}
