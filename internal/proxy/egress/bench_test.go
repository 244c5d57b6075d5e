package egress_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/proxy/egress"
)

// BenchmarkGet measures a small GET through the proxy (policy check, resolution, forwarding with
// pooled connections) against the same GET sent straight to the server, measured in the same run.
func BenchmarkGet(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello")
	}))
	b.Cleanup(srv.Close)
	fn := newFakeNet(b)
	fn.name("bench.test", "203.0.113.10")
	fn.route("203.0.113.10:80", srv.Listener.Addr().String())
	e := startProxy(b, fn)
	e.rules.set(egress.Policy{Defaults: egress.DefaultAllowlist([]string{"api.anthropic.com"}), Global: []egress.Rule{allow("bench.test", "global")}})

	direct := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	b.Cleanup(direct.CloseIdleConnections)
	proxied := e.proxyClient(b)
	get := func(c *http.Client, url string) {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	get(direct, srv.URL) // warm both connection pools
	get(proxied, "http://bench.test/")

	base := baseline(b, 2000, func() { get(direct, srv.URL) })
	for b.Loop() {
		get(proxied, "http://bench.test/")
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(base.Nanoseconds()), "baseline-ns/op")
	b.ReportMetric(float64(per)/float64(base), "x-baseline")
}

// baseline times n runs of f, outside the benchmark timer, and returns the mean.
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

// BenchmarkConnectTLS measures a tunnel through the proxy (CONNECT, the check of its
// ClientHello, a TLS handshake and a small GET in it) against the same TLS connection and
// GET made straight to the server, measured in the same run.
func BenchmarkConnectTLS(b *testing.B) {
	var read atomic.Int64
	srv := startCountingTLS(b, &read)
	fn := newFakeNet(b)
	fn.name("bench.test", "203.0.113.10")
	fn.route("203.0.113.10:443", srv)
	e := startProxy(b, fn)
	e.rules.set(egress.Policy{Global: []egress.Rule{allow("bench.test", "global")}})
	get := func(c net.Conn, br *bufio.Reader) {
		if got, err := getOverTLS(c, br, "bench.test"); err != nil || got != "hello" {
			b.Fatalf("GET: %q, %v", got, err)
		}
		c.Close()
	}
	direct := func() {
		c, err := net.Dial("tcp", srv)
		if err != nil {
			b.Fatal(err)
		}
		get(c, bufio.NewReader(c))
	}
	proxied := func() {
		status, body, c, br := e.connect(b, "bench.test:443", "")
		if status != 200 {
			b.Fatalf("CONNECT: %d %s", status, body)
		}
		get(c, br)
	}
	direct()
	proxied()

	base := baseline(b, 500, direct)
	for b.Loop() {
		proxied()
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(base.Nanoseconds()), "baseline-ns/op")
	b.ReportMetric(float64(per)/float64(base), "x-baseline")
}
