package portmux_test

import (
	"context"
	"io"
	"net"
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
