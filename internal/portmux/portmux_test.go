package portmux_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/portmux"
)

// TestStaleBytesThenSessions: a port holding bytes of an earlier session (garbage to
// this one) still gives a working session, and two streams of it are independent.
func TestStaleBytesThenSessions(t *testing.T) {
	host, guest := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go portmux.Serve(ctx, guest, func(c net.Conn) {
		defer c.Close()
		io.Copy(c, c)
	})
	// What an earlier daemon's session left on the port: yamux frames, half a line. It
	// is on the port before the new session's hello, as it would be (written in the
	// background, it could land after the go and be read as the new session's frames).
	if _, err := host.Write([]byte("\x00\x01\x00\x00garbage\npaddock-port-go 0123\nstale frame bytes")); err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	sess, err := portmux.Client(cctx, host)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	a, err := sess.Open()
	if err != nil {
		t.Fatal(err)
	}
	b, err := sess.Open()
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("to a"))
	b.Write([]byte("to b"))
	for _, c := range []struct {
		conn net.Conn
		want string
	}{{b, "to b"}, {a, "to a"}} {
		buf := make([]byte, 4)
		c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c.conn, buf); err != nil || string(buf) != c.want {
			t.Fatalf("echo: %q, %v; want %q", buf, err, c.want)
		}
	}
}

// TestNoGuest: a port where nothing answers fails when the context ends, not never.
func TestNoGuest(t *testing.T) {
	host, guest := net.Pipe()
	go io.Copy(io.Discard, guest)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := portmux.Client(ctx, host); err == nil {
		t.Fatal("a session with no guest started")
	}
}

// TestHostComesBackMidStream: a host that goes while the guest is sending it a stream,
// and the next host that comes while the guest still holds what it was sending, gets a
// session of its own, nothing of the old one's bytes read as its frames.
func TestHostComesBackMidStream(t *testing.T) {
	port := &consolePort{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go portmux.Serve(ctx, port, func(c net.Conn) {
		defer c.Close()
		first := make([]byte, 1)
		if _, err := io.ReadFull(c, first); err != nil {
			return
		}
		if first[0] == 'y' { // like `yes`: until the stream goes
			chunk := bytes.Repeat([]byte("y\n"), 32<<10)
			for {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}
		c.Write(first)
		io.Copy(c, c)
	})
	for round := range 20 {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		sess, err := portmux.Client(cctx, port.attach())
		ccancel()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		echo, err := sess.Open()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		echo.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 5)
		if _, err := echo.Write([]byte("hello")); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := io.ReadFull(echo, buf); err != nil || string(buf) != "hello" {
			t.Fatalf("round %d: echo %q, %v", round, buf, err)
		}
		// A stream left mid-transfer when the host goes.
		yes, err := sess.Open()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		yes.Write([]byte("y"))
		if _, err := io.ReadFull(yes, make([]byte, 1<<20)); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// The session is left as a daemon that ends leaves it: the next one attaches.
	}
}

// consolePort is a VM's console port as its guest sees it: one device for the VM's
// life, joined in turn to each host connection to the monitor's socket. With no host,
// reads end and writes are dropped, as QEMU's socket character device does; a write
// reaches the host in pieces, as the port's buffers carry it.
type consolePort struct {
	mu   sync.Mutex
	host net.Conn // the guest's end of the current host connection
}

// attach joins a new host connection to the port, the old one gone, and returns the
// host's end.
func (p *consolePort) attach() net.Conn {
	h, g := net.Pipe()
	p.mu.Lock()
	if p.host != nil {
		p.host.Close()
	}
	p.host = g
	p.mu.Unlock()
	return h
}

func (p *consolePort) current() net.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.host
}

func (p *consolePort) Read(b []byte) (int, error) {
	c := p.current()
	if c == nil {
		return 0, io.EOF
	}
	n, err := c.Read(b)
	if err != nil {
		return n, io.EOF
	}
	return n, nil
}

func (p *consolePort) Write(b []byte) (int, error) {
	for off := 0; off < len(b); off += 4096 {
		if c := p.current(); c != nil {
			c.Write(b[off:min(len(b), off+4096)])
		}
	}
	return len(b), nil
}

func (p *consolePort) Close() error { return nil }
