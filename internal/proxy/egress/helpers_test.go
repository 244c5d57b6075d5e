package egress_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/proxy/egress"
)

// fakeNet stands in for DNS and the outside world. Names resolve from a table; a dial to an address
// in routes goes to a test server on 127.0.0.1 instead, a dial to 127.0.0.1 goes through, and any
// other address is refused, so nothing ever leaves the machine. It records every call.
type fakeNet struct {
	t      testing.TB
	mu     sync.Mutex
	names  map[string][]netip.Addr
	routes map[string]string // "ip:port" asked for -> "127.0.0.1:port" dialled
	looked []string
	dialed []string
}

func newFakeNet(t testing.TB) *fakeNet {
	return &fakeNet{t: t, names: map[string][]netip.Addr{}, routes: map[string]string{}}
}

// name makes host resolve to addrs.
func (f *fakeNet) name(host string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range addrs {
		f.names[host] = append(f.names[host], netip.MustParseAddr(a))
	}
}

// route sends dials of addr to the loopback address real.
func (f *fakeNet) route(addr, real string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[addr] = real
}

func (f *fakeNet) LookupIP(_ context.Context, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looked = append(f.looked, host)
	addrs, ok := f.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return append([]netip.Addr(nil), addrs...), nil
}

func (f *fakeNet) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	f.mu.Lock()
	f.dialed = append(f.dialed, addr)
	real, ok := f.routes[addr]
	f.mu.Unlock()
	if !ok {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().IsLoopback() {
			return nil, fmt.Errorf("dial %s %s: connection refused (test network)", network, addr)
		}
		real = addr
	}
	var d net.Dialer
	return d.DialContext(ctx, network, real)
}

// calls returns copies of the lookups and dials made so far.
func (f *fakeNet) calls() (looked, dialed []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.looked...), append([]string(nil), f.dialed...)
}

// policyStore holds the policy the proxy reads for each request; tests change it between requests.
type policyStore struct {
	mu  sync.Mutex
	pol egress.Policy
}

func (s *policyStore) set(p egress.Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pol = p
}

func (s *policyStore) Policy(context.Context, string) (egress.Policy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pol, nil
}

// denials records what OnDenial receives.
type denials struct {
	mu   sync.Mutex
	list []egress.Denial
}

func (d *denials) add(x egress.Denial) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.list = append(d.list, x)
}

func (d *denials) all() []egress.Denial {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]egress.Denial(nil), d.list...)
}

// requests records what OnRequest receives.
type requests struct {
	mu   sync.Mutex
	list []egress.Request
}

func (d *requests) add(x egress.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.list = append(d.list, x)
}

func (d *requests) all() []egress.Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]egress.Request(nil), d.list...)
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env is a running proxy for sandbox "myrepo" on 127.0.0.1.
type env struct {
	addr    string
	net     *fakeNet
	rules   *policyStore
	denials *denials
	seen    *requests
	logs    *syncBuffer
	stop    func() // stops the proxy and waits for Serve to return
}

const sandbox = "myrepo"

func startProxy(t testing.TB, fn *fakeNet) *env {
	t.Helper()
	e := &env{net: fn, rules: &policyStore{}, denials: &denials{}, seen: &requests{}, logs: &syncBuffer{}}
	p := egress.New(egress.Options{
		Policy:    e.rules.Policy,
		OnDenial:  e.denials.add,
		OnRequest: e.seen.add,
		LookupIP:  fn.LookupIP,
		Dial:      fn.Dial,
		Logger:    slog.New(slog.NewTextHandler(e.logs, nil)),
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln, sandbox) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("Serve did not return after its context was cancelled")
			}
		})
	}
	t.Cleanup(e.stop)
	return e
}

// startEcho runs a TCP server on 127.0.0.1 that echoes what it reads, half-closes when its input
// ends, and returns its address.
func startEcho(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
				_ = c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	return ln.Addr().String()
}

// dialProxy opens a raw connection to the proxy with a deadline, so that a broken proxy fails the
// test instead of hanging it.
func (e *env) dialProxy(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// connect sends CONNECT target (plus early bytes in the same write) and returns the status code,
// the body of a refusal, and a reader positioned after the response head.
func (e *env) connect(t testing.TB, target, early string) (status int, body string, c net.Conn, br *bufio.Reader) {
	t.Helper()
	c = e.dialProxy(t)
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n%s", target, target, early); err != nil {
		t.Fatal(err)
	}
	br = bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("read CONNECT response: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), c, br
	}
	return resp.StatusCode, "", c, br
}

// roundTrip sends a raw request and returns the response with its body read.
func (e *env) roundTrip(t testing.TB, raw string) (*http.Response, string) {
	t.Helper()
	c := e.dialProxy(t)
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(b)
}

// proxyClient is an http.Client that sends everything through the proxy, as a sandbox's tools do.
func (e *env) proxyClient(t testing.TB) *http.Client {
	t.Helper()
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: e.addr})}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// echoExchange checks that a tunnel carries bytes both ways and half-closes: it reads back what
// was sent early, sends more, closes its write side and expects the rest and then EOF.
func echoExchange(t testing.TB, c net.Conn, br *bufio.Reader, early string) {
	t.Helper()
	got := make([]byte, len(early))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != early {
		t.Fatalf("echo of early bytes = %q, %v; want %q", got, err, early)
	}
	if _, err := io.WriteString(c, "pong"); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "pong" {
		t.Fatalf("after half-close read %q, %v; want \"pong\" then EOF", rest, err)
	}
}
