// Package guesttest serves the guest in-process and connects a guestclient.Client to it
// over a unix socket pair, for tests of what is built on the guest protocol.
package guesttest

import (
	"context"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/paddockhq/paddock/internal/guest"
	"github.com/paddockhq/paddock/internal/guestclient"
)

// SocketPair returns the two ends of a connected unix socket pair.
func SocketPair(tb testing.TB) (net.Conn, net.Conn) {
	tb.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}
	return conn(fds[0]), conn(fds[1])
}

// Dialer returns a DialFunc whose every connection is served by srv in-process until the
// test ends.
func Dialer(tb testing.TB, srv *guest.Server) guestclient.DialFunc {
	return func(context.Context) (net.Conn, error) {
		a, b := SocketPair(tb)
		go func() { _ = srv.ServeConn(tb.Context(), b) }()
		return a, nil
	}
}

// Connect starts a guest in-process and returns a client connected to it, closed when
// the test ends.
func Connect(tb testing.TB) (*guestclient.Client, *guest.Server) {
	tb.Helper()
	srv := guest.NewServer(guest.Options{Sandbox: "test", Version: "v0.0.0-test"})
	c, err := guestclient.New(tb.Context(), Dialer(tb, srv), "v0.0.0-test")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c, srv
}
