package egress

import (
	"bytes"
	"crypto/tls"
	"net"
	"testing"
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
