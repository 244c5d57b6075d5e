package guestclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
	"github.com/paddockhq/paddock/internal/guestproto"
)

// serveTCP listens on 127.0.0.1 and hands every connection to handle until the test ends.
func serveTCP(t *testing.T, handle func(net.Conn)) *net.TCPAddr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				handle(conn)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr)
}

// counter reads until EOF, then answers with the number of bytes it read: it only
// answers if the half-close arrives.
func counter(conn net.Conn) {
	n, _ := io.Copy(io.Discard, conn)
	fmt.Fprintf(conn, "read %d bytes", n)
}

// echo copies its input back and half-closes when the input ends.
func echo(conn net.Conn) {
	io.Copy(conn, conn)
	conn.(*net.TCPConn).CloseWrite()
}

type halfCloser interface {
	net.Conn
	CloseWrite() error
}

func TestForward(t *testing.T) {
	c, _ := guesttest.Connect(t)
	ctx := t.Context()

	t.Run("echo", func(t *testing.T) {
		addr := serveTCP(t, echo)
		conn, err := c.Forward(ctx, uint32(addr.Port))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		msg := strings.Repeat("ping ", 20000)
		go func() {
			io.WriteString(conn, msg)
			conn.(halfCloser).CloseWrite()
		}()
		got, err := io.ReadAll(conn)
		if err != nil || string(got) != msg {
			t.Errorf("echo returned %d bytes, %v; want the %d sent", len(got), err, len(msg))
		}
	})

	t.Run("half-close", func(t *testing.T) {
		addr := serveTCP(t, counter)
		conn, err := c.Forward(ctx, uint32(addr.Port))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "12345")
		if err := conn.(halfCloser).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(conn)
		if err != nil || string(got) != "read 5 bytes" {
			t.Errorf("answer %q, %v", got, err)
		}
	})

	t.Run("read deadline", func(t *testing.T) {
		addr := serveTCP(t, counter)
		conn, err := c.Forward(ctx, uint32(addr.Port))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Read past the deadline = %v, want a timeout", err)
		}
	})

	t.Run("refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		_, err = c.Forward(ctx, uint32(port))
		if ge := (*guestclient.Error)(nil); !errors.As(err, &ge) || ge.Code != guestproto.Unavailable {
			t.Errorf("Forward to a closed port = %v, want Unavailable", err)
		}
	})
}

func TestReverse(t *testing.T) {
	c, _ := guesttest.Connect(t)
	ctx := t.Context()
	echoAddr := serveTCP(t, echo)
	counterAddr := serveTCP(t, counter)
	dialTo := func(addr *net.TCPAddr) func(context.Context) (net.Conn, error) {
		return func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr.String())
		}
	}

	rt, err := c.Reverse(ctx, 0, dialTo(echoAddr))
	if err != nil {
		t.Fatal(err)
	}
	if rt.Port() == 0 {
		t.Fatal("Reverse reported port 0")
	}
	for i := range 3 {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", rt.Port()))
		if err != nil {
			t.Fatal(err)
		}
		msg := fmt.Sprintf("hello %d", i)
		io.WriteString(conn, msg)
		conn.(*net.TCPConn).CloseWrite()
		got, err := io.ReadAll(conn)
		conn.Close()
		if err != nil || string(got) != msg {
			t.Errorf("through the reverse tunnel: %q, %v; want %q", got, err, msg)
		}
	}

	rt2, err := c.Reverse(ctx, 0, dialTo(counterAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", rt2.Port()))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "1234567")
	conn.(*net.TCPConn).CloseWrite()
	got, _ := io.ReadAll(conn)
	conn.Close()
	if string(got) != "read 7 bytes" {
		t.Errorf("half-close through the reverse tunnel: answer %q", got)
	}

	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	// The cancellation reaches the guest asynchronously.
	for deadline := time.Now().Add(10 * time.Second); ; {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", rt.Port()))
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("the reverse listener still accepts after Close")
		}
		time.Sleep(10 * time.Millisecond)
	}

	t.Run("dial fails", func(t *testing.T) {
		rt, err := c.Reverse(ctx, 0, func(context.Context) (net.Conn, error) { return nil, errors.New("no") })
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", rt.Port()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Error("read from a connection whose bridge failed returned data")
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Error("the connection whose bridge failed was not closed")
		}
	})
}
