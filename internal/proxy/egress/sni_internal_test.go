package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// clientHello is the first flight of a Go TLS client asking for name.
func clientHello(tb testing.TB, name string) []byte {
	tb.Helper()
	c, s := net.Pipe()
	go func() {
		_ = tls.Client(c, &tls.Config{ServerName: name, InsecureSkipVerify: true}).Handshake()
	}()
	buf := make([]byte, 64<<10)
	n, err := s.Read(buf)
	if err != nil {
		tb.Fatal(err)
	}
	c.Close()
	s.Close()
	return buf[:n]
}

// BenchmarkServerName is what the check adds to each TLS tunnel: reading the name its
// ClientHello asks for.
func BenchmarkServerName(b *testing.B) {
	hello := clientHello(b, "api.anthropic.com")
	for b.Loop() {
		if name, ok := serverName(bytes.NewReader(hello)); !ok || name != "api.anthropic.com" {
			b.Fatalf("serverName = %q, %v", name, ok)
		}
	}
}

// TestStalledClientHelloIsCutOff: a client that starts a ClientHello and stalls loses its
// tunnel once the wait for the rest is over, and nothing of it reaches the server.
func TestStalledClientHelloIsCutOff(t *testing.T) {
	helloTimeout = 200 * time.Millisecond
	t.Cleanup(func() { helloTimeout = 10 * time.Second })
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	heard := make(chan int, 1)
	go func() {
		c, err := up.Accept()
		if err != nil {
			return
		}
		n, _ := io.Copy(io.Discard, c)
		heard <- int(n)
	}()
	var denied atomic.Int32
	p := New(Options{
		Policy: func(context.Context, string) (Policy, error) {
			return Policy{Sandbox: []Rule{{Pattern: up.Addr().String(), Action: Allow}}}, nil
		},
		OnDenial: func(Denial) { denied.Add(1) },
	})
	srv := httptest.NewServer(p.Handler("sb"))
	t.Cleanup(srv.Close)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n\x16\x03\x01\x02", up.Addr())
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	start := time.Now()
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the tunnel answered a stalled ClientHello")
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("the tunnel was cut off after %s", waited)
	}
	select {
	case n := <-heard:
		if n != 0 {
			t.Errorf("the server heard %d bytes", n)
		}
	case <-time.After(5 * time.Second):
		t.Error("the connection to the server stayed open")
	}
	if denied.Load() != 1 {
		t.Errorf("%d denials, want 1", denied.Load())
	}
}
