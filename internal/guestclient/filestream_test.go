package guestclient_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guest"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
	"github.com/paddockhq/paddock/internal/guestproto"
)

// streamGuest is an in-process guest whose connections are counted: the first carries
// the gRPC session, every later one a file stream. wrap, when set, wraps the daemon's end
// of the n-th connection (counting from 1).
type streamGuest struct {
	srv   *guest.Server
	dials atomic.Int32
	wrap  func(n int32, c net.Conn) net.Conn
}

func newStreamGuest(t *testing.T, wrap func(n int32, c net.Conn) net.Conn) (*guestclient.Client, *streamGuest) {
	t.Helper()
	g := &streamGuest{srv: guest.NewServer(guest.Options{Sandbox: "test", Version: "v0.0.0-test"}), wrap: wrap}
	dial := guesttest.Dialer(t, g.srv)
	c, err := guestclient.New(t.Context(), func(ctx context.Context) (net.Conn, error) {
		conn, err := dial(ctx)
		n := g.dials.Add(1)
		if err == nil && g.wrap != nil {
			conn = g.wrap(n, conn)
		}
		return conn, err
	}, "v0.0.0-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, g
}

// streams is the number of file streams opened so far.
func (g *streamGuest) streams() int32 { return g.dials.Load() - 1 }

// onlyReader hides what else r is, so that WriteFile cannot know its size.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestFileStreamRoundTrip(t *testing.T) {
	c, g := newStreamGuest(t, nil)
	root := t.TempDir()
	const threshold = 1 << 20
	for _, size := range []int{0, 1, threshold - 1, threshold, threshold + 1, 5<<20 + 3} {
		for _, known := range []bool{true, false} {
			data := make([]byte, size)
			rand.Read(data)
			var src io.Reader = bytes.NewReader(data)
			if !known {
				src = onlyReader{src}
			}
			before := g.streams()
			n, err := c.WriteFile(t.Context(), root, "dir/f.bin", 0o640, true, src)
			if err != nil || n != int64(size) {
				t.Fatalf("WriteFile(%d bytes, size known %v) = %d, %v", size, known, n, err)
			}
			onDisk, err := os.ReadFile(filepath.Join(root, "dir/f.bin"))
			if err != nil || !bytes.Equal(onDisk, data) {
				t.Fatalf("after WriteFile(%d bytes): the file holds %d bytes (%v), not those written", size, len(onDisk), err)
			}
			var got bytes.Buffer
			n, err = c.ReadFile(t.Context(), root, "dir/f.bin", &got)
			if err != nil || n != int64(size) || !bytes.Equal(got.Bytes(), data) {
				t.Fatalf("ReadFile = %d bytes, %v; want the %d written", n, err, size)
			}
			fi, err := os.Stat(filepath.Join(root, "dir/f.bin"))
			if err != nil || fi.Mode().Perm() != 0o640 {
				t.Fatalf("written file: %v, %v; want mode 0640", fi.Mode(), err)
			}
			want := int32(0)
			if size >= threshold {
				want = 2 // the write and the read
			}
			if got := g.streams() - before; got != want {
				t.Errorf("%d bytes (size known %v): %d file streams, want %d", size, known, got, want)
			}
		}
	}
	entries, _ := os.ReadDir(filepath.Join(root, "dir"))
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want only f.bin: %v", len(entries), entries)
	}
}

func TestFileStreamModes(t *testing.T) {
	c, g := newStreamGuest(t, nil)
	root := t.TempDir()
	data := bytes.Repeat([]byte("x"), 2<<20)
	for _, tc := range []struct {
		mode os.FileMode
		want os.FileMode
	}{{0, 0o644}, {0o600, 0o600}, {0o755, 0o755}, {0o750 | os.ModeSetuid, 0o750 | os.ModeSetuid}} {
		if _, err := c.WriteFile(t.Context(), root, "m.bin", tc.mode, false, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(root, "m.bin"))
		if err != nil || fi.Mode()&(os.ModePerm|os.ModeSetuid) != tc.want {
			t.Errorf("WriteFile with mode %v: the file has %v (%v), want %v", tc.mode, fi.Mode(), err, tc.want)
		}
	}
	if g.streams() != 4 {
		t.Errorf("%d file streams, want 4", g.streams())
	}
}

// An agent inside points a symlink out of the root and hopes that a large transfer,
// which takes the file stream, follows it.
func TestFileStreamRefusesSymlinkEscape(t *testing.T) {
	c, g := newStreamGuest(t, nil)
	root, outside := jail(t)
	secret := bytes.Repeat([]byte("secret"), 1<<20)
	writeFile(t, filepath.Join(outside, "secret.bin"), string(secret), 0o644)
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.bin"), filepath.Join(root, "secret.bin")); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("y"), 2<<20)
	_, err := c.WriteFile(t.Context(), root, "link/planted", 0o644, false, bytes.NewReader(data))
	if !errors.Is(err, guestclient.ErrPathEscapes) {
		t.Errorf("write through a symlink out of the root: %v, want ErrPathEscapes", err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "planted")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was planted outside the root: %v", err)
	}
	_, err = c.WriteFile(t.Context(), root, "link/new/planted", 0o644, true, onlyReader{bytes.NewReader(data)})
	if !errors.Is(err, guestclient.ErrPathEscapes) {
		t.Errorf("write with parents through a symlink out of the root: %v, want ErrPathEscapes", err)
	}
	// Stat refuses these, so they are read the old way; see
	// TestFileStreamReadRefusesSymlinkSwappedIn for the file stream's own refusal.
	for _, p := range []string{"link/secret.bin", "secret.bin"} {
		var got bytes.Buffer
		_, err = c.ReadFile(t.Context(), root, p, &got)
		if !errors.Is(err, guestclient.ErrPathEscapes) || got.Len() > 0 {
			t.Errorf("read %s: %d bytes, %v; want none and ErrPathEscapes", p, got.Len(), err)
		}
	}
	if g.streams() != 2 {
		t.Errorf("%d file streams, want the 2 writes", g.streams())
	}
	entries, _ := os.ReadDir(outside)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".paddock-tmp-") {
			t.Errorf("a temporary file was left outside the root: %s", e.Name())
		}
	}
}

// The file stream's own read refuses a path through a symlink out of the root, even
// when the daemon's Stat did not stop it (the link was swapped in between).
func TestFileStreamReadRefusesSymlinkSwappedIn(t *testing.T) {
	root, outside := jail(t)
	writeFile(t, filepath.Join(outside, "secret.bin"), strings.Repeat("s", 2<<20), 0o644)
	writeFile(t, filepath.Join(root, "f.bin"), strings.Repeat("f", 2<<20), 0o644)
	var swapped atomic.Bool
	c, _ := newStreamGuest(t, func(n int32, conn net.Conn) net.Conn {
		if n > 1 && swapped.CompareAndSwap(false, true) {
			// The file stream's connection is dialled after the Stat: swap now.
			os.Remove(filepath.Join(root, "f.bin"))
			if err := os.Symlink(filepath.Join(outside, "secret.bin"), filepath.Join(root, "f.bin")); err != nil {
				t.Error(err)
			}
		}
		return conn
	})
	var got bytes.Buffer
	_, err := c.ReadFile(t.Context(), root, "f.bin", &got)
	if !swapped.Load() {
		t.Fatal("the read did not take a file stream")
	}
	if !errors.Is(err, guestclient.ErrPathEscapes) || got.Len() > 0 {
		t.Errorf("read of a symlink swapped in: %d bytes, %v; want none and ErrPathEscapes", got.Len(), err)
	}
}

// cutConn ends the daemon's end of a connection after limit bytes in one direction.
type cutConn struct {
	net.Conn
	mu           sync.Mutex
	read, write  int64
	limitReading bool
	limit        int64
}

func (c *cutConn) Read(p []byte) (int, error) {
	if !c.limitReading {
		return c.Conn.Read(p)
	}
	c.mu.Lock()
	left := c.limit - c.read
	c.mu.Unlock()
	if left <= 0 {
		c.Conn.Close()
		return 0, io.EOF
	}
	n, err := c.Conn.Read(p[:min(int64(len(p)), left)])
	c.mu.Lock()
	c.read += int64(n)
	c.mu.Unlock()
	return n, err
}

func (c *cutConn) Write(p []byte) (int, error) {
	if c.limitReading {
		return c.Conn.Write(p)
	}
	c.mu.Lock()
	left := c.limit - c.write
	c.mu.Unlock()
	if int64(len(p)) > left {
		n, _ := c.Conn.Write(p[:max(left, 0)])
		c.Conn.Close()
		return n, net.ErrClosed
	}
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	c.write += int64(n)
	c.mu.Unlock()
	return n, err
}

func TestFileStreamReadCutShort(t *testing.T) {
	c, g := newStreamGuest(t, func(n int32, conn net.Conn) net.Conn {
		if n > 1 {
			return &cutConn{Conn: conn, limitReading: true, limit: 1 << 20}
		}
		return conn
	})
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "big.bin"), strings.Repeat("b", 3<<20), 0o644)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	n, err := c.ReadFile(ctx, root, "big.bin", io.Discard)
	if !errors.Is(err, guestproto.ErrStreamCut) || ctx.Err() != nil {
		t.Errorf("read of a stream cut short: %d bytes, %v; want ErrStreamCut, at once", n, err)
	}
	if g.streams() != 1 {
		t.Errorf("%d file streams, want 1", g.streams())
	}
}

func TestFileStreamWriteCutShort(t *testing.T) {
	c, g := newStreamGuest(t, func(n int32, conn net.Conn) net.Conn {
		if n > 1 {
			return &cutConn{Conn: conn, limit: 1 << 20}
		}
		return conn
	})
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "f.txt"), "old", 0o644)
	for _, src := range []io.Reader{bytes.NewReader(make([]byte, 3<<20)), onlyReader{bytes.NewReader(make([]byte, 3<<20))}} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err := c.WriteFile(ctx, root, "f.txt", 0, false, src)
		if err == nil || ctx.Err() != nil {
			t.Errorf("write of a stream cut short: %v; want an error, at once", err)
		}
		cancel()
	}
	if g.streams() != 2 {
		t.Errorf("%d file streams, want 2", g.streams())
	}
	if b, err := os.ReadFile(filepath.Join(root, "f.txt")); err != nil || string(b) != "old" {
		t.Errorf("the file holds %q (%v) after a write cut short, want the old content", b, err)
	}
	// The guest removes its temporary files once it notices the end of the stream.
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, _ := os.ReadDir(root)
		if len(entries) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("temporary files left after a write cut short: %v", entries)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// oldGuestConn makes the guest's hello look like one from a guest from before the file
// stream: the same line without its features.
type oldGuestConn struct {
	net.Conn
	r *bufio.Reader
}

func newOldGuestConn(t *testing.T, conn net.Conn) net.Conn {
	r := bufio.NewReader(conn)
	pr, pw := io.Pipe()
	go func() {
		line, err := r.ReadBytes('\n')
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		var h map[string]any
		if err := json.Unmarshal(line, &h); err != nil {
			t.Error(err)
		}
		if _, ok := h["features"]; !ok {
			t.Error("the guest announced no features")
		}
		delete(h, "features")
		b, _ := json.Marshal(h)
		pw.Write(append(b, '\n'))
		_, err = io.Copy(pw, r)
		pw.CloseWithError(err)
	}()
	return &oldGuestConn{Conn: conn, r: bufio.NewReader(pr)}
}

func (c *oldGuestConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func TestFileStreamFallbackToOlderGuest(t *testing.T) {
	c, g := newStreamGuest(t, func(n int32, conn net.Conn) net.Conn { return newOldGuestConn(t, conn) })
	root := t.TempDir()
	data := make([]byte, 3<<20)
	rand.Read(data)
	for _, src := range []io.Reader{bytes.NewReader(data), onlyReader{bytes.NewReader(data)}} {
		if n, err := c.WriteFile(t.Context(), root, "f.bin", 0o600, false, src); err != nil || n != int64(len(data)) {
			t.Fatalf("WriteFile to an older guest = %d, %v", n, err)
		}
		var got bytes.Buffer
		if n, err := c.ReadFile(t.Context(), root, "f.bin", &got); err != nil || n != int64(len(data)) || !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("ReadFile from an older guest = %d, %v", n, err)
		}
	}
	if g.streams() != 0 {
		t.Errorf("%d connections besides the session to an older guest, want none", g.streams())
	}
}

// fakeStreamGuest serves the file streams (every connection after the first, which the
// real guest serves) with answer, which may lie.
func fakeStreamGuest(t *testing.T, answer func(conn net.Conn, req guestproto.FileRequest)) *guestclient.Client {
	srv := guest.NewServer(guest.Options{Sandbox: "test", Version: "v0.0.0-test"})
	real := guesttest.Dialer(t, srv)
	var dials atomic.Int32
	c, err := guestclient.New(t.Context(), func(ctx context.Context) (net.Conn, error) {
		if dials.Add(1) == 1 {
			return real(ctx)
		}
		a, b := guesttest.SocketPair(t)
		go func() {
			defer b.Close()
			if _, err := guestproto.ServerHandshake(b, "v0.0.0-fake", guestproto.StreamFiles); err != nil {
				t.Error(err)
				return
			}
			var req guestproto.FileRequest
			if err := guestproto.ReadMessage(b, &req); err != nil {
				t.Error(err)
				return
			}
			answer(b, req)
		}()
		return a, nil
	}, "v0.0.0-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The daemon does not trust what a guest says about sizes: the agent inside controls
// the guest.
func TestFileStreamUntrustedGuest(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "big.bin"), strings.Repeat("b", 2<<20), 0o644)
	for _, tc := range []struct {
		name   string
		answer func(conn net.Conn, req guestproto.FileRequest)
	}{
		{"more bytes than announced", func(conn net.Conn, req guestproto.FileRequest) {
			guestproto.WriteMessage(conn, guestproto.FileStatus{Size: 10})
			conn.Write(bytes.Repeat([]byte("z"), 100))
			guestproto.WriteMessage(conn, guestproto.FileStatus{Size: 100})
		}},
		{"fewer bytes than announced", func(conn net.Conn, req guestproto.FileRequest) {
			guestproto.WriteMessage(conn, guestproto.FileStatus{Size: 1 << 40})
			conn.Write(bytes.Repeat([]byte("z"), 100))
		}},
		{"a last status that disagrees", func(conn net.Conn, req guestproto.FileRequest) {
			guestproto.WriteMessage(conn, guestproto.FileStatus{Size: 10})
			conn.Write(bytes.Repeat([]byte("z"), 10))
			guestproto.WriteMessage(conn, guestproto.FileStatus{Size: 11})
		}},
		{"a negative size", func(conn net.Conn, req guestproto.FileRequest) {
			guestproto.WriteMessage(conn, guestproto.FileStatus{Size: -5})
		}},
		{"a status too long", func(conn net.Conn, req guestproto.FileRequest) {
			conn.Write([]byte{0xff, 0xff, 0xff, 0xff})
			conn.Write(bytes.Repeat([]byte("{"), 1<<20))
		}},
		{"silence, then hanging up", func(conn net.Conn, req guestproto.FileRequest) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeStreamGuest(t, tc.answer)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if n, err := c.ReadFile(ctx, root, "big.bin", io.Discard); err == nil || ctx.Err() != nil {
				t.Errorf("ReadFile = %d, %v; want an error, at once", n, err)
			}
		})
	}
	t.Run("a write size that disagrees", func(t *testing.T) {
		c := fakeStreamGuest(t, func(conn net.Conn, req guestproto.FileRequest) {
			guestproto.WriteMessage(conn, guestproto.FileStatus{})
			for {
				n, err := guestproto.ReadFrameHeader(conn)
				if err != nil || n == 0 {
					break
				}
				io.CopyN(io.Discard, conn, n)
			}
			guestproto.WriteMessage(conn, guestproto.FileStatus{Size: 7})
		})
		if n, err := c.WriteFile(t.Context(), root, "w.bin", 0, false, bytes.NewReader(make([]byte, 2<<20))); err == nil {
			t.Errorf("WriteFile = %d, nil; want an error", n)
		}
	})
}

// Where connections are bridged through a command's streams (an exec bridge), large
// files keep to the session; the same guest over the same dial without the mark takes
// file streams (see TestFileStreamRoundTrip), however slow its first connection was.
func TestFileStreamNotOverDearConnections(t *testing.T) {
	srv := guest.NewServer(guest.Options{Sandbox: "test", Version: "v0.0.0-test"})
	dial := guesttest.Dialer(t, srv)
	var dials atomic.Int32
	c, err := guestclient.New(t.Context(), func(ctx context.Context) (net.Conn, error) {
		dials.Add(1)
		conn, err := dial(ctx)
		return bridgedConn{conn}, err
	}, "v0.0.0-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	root := t.TempDir()
	data := make([]byte, 3<<20)
	rand.Read(data)
	if n, err := c.WriteFile(t.Context(), root, "f.bin", 0, false, bytes.NewReader(data)); err != nil || n != int64(len(data)) {
		t.Fatalf("WriteFile = %d, %v", n, err)
	}
	var got bytes.Buffer
	if n, err := c.ReadFile(t.Context(), root, "f.bin", &got); err != nil || n != int64(len(data)) || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("ReadFile = %d, %v", n, err)
	}
	if dials.Load() != 1 {
		t.Errorf("%d connections, want only the session's", dials.Load())
	}
}

// bridgedConn is a connection that says it was made through a command's streams.
type bridgedConn struct{ net.Conn }

func (bridgedConn) Bridged() bool { return true }

// TestFileStreamAfterSlowFirstConnection: a first connection that took long (a loaded
// machine) does not cost a client with cheap connections its file streams.
func TestFileStreamAfterSlowFirstConnection(t *testing.T) {
	var slow atomic.Bool
	slow.Store(true)
	c, g := newStreamGuest(t, func(n int32, conn net.Conn) net.Conn {
		if slow.CompareAndSwap(true, false) {
			time.Sleep(100 * time.Millisecond)
		}
		return conn
	})
	root := t.TempDir()
	data := make([]byte, 3<<20)
	rand.Read(data)
	if n, err := c.WriteFile(t.Context(), root, "f.bin", 0, false, bytes.NewReader(data)); err != nil || n != int64(len(data)) {
		t.Fatalf("WriteFile = %d, %v", n, err)
	}
	if g.streams() != 1 {
		t.Errorf("%d file streams, want the write's", g.streams())
	}
}
