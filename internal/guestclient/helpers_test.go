package guestclient_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/paddockhq/paddock/internal/guest"
	"github.com/paddockhq/paddock/internal/guestclient"
)

// socketPair returns the two ends of a connected unix socket pair.
func socketPair(tb testing.TB) (net.Conn, net.Conn) {
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

// pairDialer returns a DialFunc whose every connection is served by srv in-process until
// the test ends.
func pairDialer(tb testing.TB, srv *guest.Server) guestclient.DialFunc {
	return func(context.Context) (net.Conn, error) {
		a, b := socketPair(tb)
		go func() { _ = srv.ServeConn(tb.Context(), b) }()
		return a, nil
	}
}

// newClient starts a guest in-process and returns a client connected to it.
func newClient(tb testing.TB) (*guestclient.Client, *guest.Server) {
	tb.Helper()
	srv := guest.NewServer(guest.Options{Sandbox: "test", Version: "v0.0.0-test"})
	c, err := guestclient.New(tb.Context(), pairDialer(tb, srv), "v0.0.0-test")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c, srv
}

// jail makes a root directory three levels below a temporary directory, so that
// "../../.." from inside it still lands in the temporary directory. It returns the root
// and the temporary directory.
func jail(tb testing.TB) (root, outside string) {
	tb.Helper()
	outside = tb.TempDir()
	root = filepath.Join(outside, "a", "b", "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	return root, outside
}

func writeFile(tb testing.TB, path string, data string, mode os.FileMode) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		tb.Fatal(err)
	}
}
