package egress_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/paddockhq/paddock/internal/proxy/egress"
)

// TestConnectChecksTLSServerName opens TLS through CONNECT tunnels to a host on a shared
// server (a CDN answers for whatever name the ClientHello asks): a tunnel whose ClientHello
// names another host, or none, is closed before a byte of it reaches the server, and the
// sandbox's denials say so; a tunnel naming its own host works.
func TestConnectChecksTLSServerName(t *testing.T) {
	var upBytes atomic.Int64
	cdn := startCountingTLS(t, &upBytes)
	fn := newFakeNet(t)
	fn.name("allowed.test", "203.0.113.10")
	fn.route("203.0.113.10:443", cdn)
	fn.route("203.0.113.20:443", cdn)
	e := startProxy(t, fn)
	e.rules.set(egress.Policy{Global: []egress.Rule{allow("allowed.test", "global"), allow("203.0.113.20", "global")}})

	tests := []struct {
		name       string
		target     string
		sni        string
		raw        string // sent instead of a ClientHello
		wantHost   string // the denial's host; "" when the tunnel works
		wantReason string
	}{
		{name: "its own host", target: "allowed.test:443", sni: "allowed.test"},
		{name: "its own host in capitals", target: "allowed.test:443", sni: "ALLOWED.test"},
		{name: "another host on the same server", target: "allowed.test:443", sni: "blocked.test",
			wantHost: "blocked.test", wantReason: "TLS in the tunnel to allowed.test names another server, blocked.test (domain fronting)"},
		{name: "no server name", target: "allowed.test:443", sni: "",
			wantHost: "allowed.test", wantReason: "TLS in the tunnel to allowed.test names no server (no SNI)"},
		{name: "a server name that is no host name", target: "allowed.test:443", sni: "bad\x1b]0;x\x07.test",
			wantHost: `"bad\x1b]0;x\a.test"`, wantReason: `names another server, "bad\x1b]0;x\a.test"`},
		{name: "an address, no server name", target: "203.0.113.20:443", sni: ""},
		{name: "an address, a server name", target: "203.0.113.20:443", sni: "blocked.test",
			wantHost: "blocked.test", wantReason: "names another server, blocked.test"},
		{name: "a handshake record that is no ClientHello", target: "allowed.test:443", raw: "\x16\x03\x01\x00\x05hello",
			wantHost: "allowed.test", wantReason: "no ClientHello paddock can read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			denied0, up0 := len(e.denials.all()), upBytes.Load()
			status, body, c, br := e.connect(t, tt.target, "")
			if status != 200 {
				t.Fatalf("CONNECT: %d %s", status, body)
			}
			var err error
			var got string
			if tt.raw != "" {
				_, _ = io.WriteString(c, tt.raw)
				_, err = br.ReadByte()
			} else {
				got, err = getOverTLS(c, br, tt.sni)
			}
			denied := e.denials.all()[denied0:]
			if tt.wantHost == "" {
				if err != nil || got != "hello" {
					t.Fatalf("GET through the tunnel: %q, %v; want hello", got, err)
				}
				if len(denied) != 0 {
					t.Errorf("denials %+v, want none", denied)
				}
				return
			}
			if err == nil {
				t.Fatalf("the tunnel carried TLS naming %q to %s (got %q)", tt.sni, tt.target, got)
			}
			if n := upBytes.Load() - up0; n != 0 {
				t.Errorf("the server received %d bytes of a refused tunnel", n)
			}
			if len(denied) != 1 || denied[0].Host != tt.wantHost || denied[0].Port != 443 || !strings.Contains(denied[0].Reason, tt.wantReason) {
				t.Fatalf("denials %+v, want one of %s:443 saying %q", denied, tt.wantHost, tt.wantReason)
			}
			seen := e.seen.all()
			if last := seen[len(seen)-1]; last.Allowed || last.Host != tt.wantHost || last.Method != "CONNECT" {
				t.Errorf("last request told %+v, want a refusal of %s", last, tt.wantHost)
			}
		})
	}
}

// TestConnectServerSpeaksFirst: a tunnel that is not TLS passes as before, also for a
// protocol whose server speaks first (SMTP, say), which the check must not wait on.
func TestConnectServerSpeaksFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "220 ready\r\n")
		line, _ := bufio.NewReader(c).ReadString('\n')
		_, _ = io.WriteString(c, "250 "+line)
	}()
	fn := newFakeNet(t)
	fn.name("mail.test", "203.0.113.10")
	fn.route("203.0.113.10:25", ln.Addr().String())
	e := startProxy(t, fn)
	e.rules.set(egress.Policy{Sandbox: []egress.Rule{allow("mail.test:25", sandbox)}})

	status, body, c, br := e.connect(t, "mail.test:25", "")
	if status != 200 {
		t.Fatalf("CONNECT: %d %s", status, body)
	}
	if banner, err := br.ReadString('\n'); err != nil || banner != "220 ready\r\n" {
		t.Fatalf("banner %q, %v", banner, err)
	}
	_, _ = io.WriteString(c, "HELO sandbox\r\n")
	if reply, err := br.ReadString('\n'); err != nil || reply != "250 HELO sandbox\r\n" {
		t.Fatalf("reply %q, %v", reply, err)
	}
}

// startCountingTLS runs an HTTPS server answering "hello" that counts the bytes it reads,
// and returns its address.
func startCountingTLS(t testing.TB, n *atomic.Int64) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Listener = countingListener{srv.Listener, n}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// getOverTLS runs TLS naming sni over a tunnel and a GET in it, and returns the body.
func getOverTLS(c net.Conn, br *bufio.Reader, sni string) (string, error) {
	tc := tls.Client(bufConn{c, br}, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		return "", err
	}
	if _, err := io.WriteString(tc, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// bufConn reads through the reader that took the CONNECT response.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// countingListener counts the bytes its connections read.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}
