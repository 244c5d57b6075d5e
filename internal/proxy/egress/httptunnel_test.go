package egress_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/proxy/egress"
)

// TestConnectChecksHTTPHost: plain HTTP through a tunnel to an allowed host on port 80 (which
// a rule without a port opens) is read request by request: a request for the allowed host
// goes through, and one whose Host names another host (a CDN answers for it: domain
// fronting) ends the tunnel before the server sees it, recorded as a denial. A request line
// split across writes is read whole; a WebSocket upgrade passes what follows as it is.
func TestConnectChecksHTTPHost(t *testing.T) {
	up := startUpstream(t)
	fn := newFakeNet(t)
	fn.name("allowed.test", "203.0.113.10")
	fn.route("203.0.113.10:80", up.Listener.Addr().String())
	e := startProxy(t, fn)
	e.rules.set(egress.Policy{Sandbox: []egress.Rule{allow("allowed.test", sandbox)}})

	get := func(br *bufio.Reader) (*http.Response, error) {
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	status, body, c, br := e.connect(t, "allowed.test:80", "GE")
	if status != 200 {
		t.Fatalf("CONNECT: %d %s", status, body)
	}
	_, _ = io.WriteString(c, "T /first HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
	if resp, err := get(br); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a request for the allowed host: %v %v", resp, err)
	}
	if r, _ := up.lastRequest(); r.URL.Path != "/first" || r.Host != "allowed.test" || r.UserAgent() != "" {
		t.Errorf("the server got %s for %s with User-Agent %q, want /first for allowed.test as sent", r.URL.Path, r.Host, r.UserAgent())
	}
	_, _ = io.WriteString(c, "GET /fronted HTTP/1.1\r\nHost: blocked.test\r\n\r\n")
	if resp, err := get(br); err == nil {
		t.Fatalf("a request for another host through the tunnel was answered: %v", resp.Status)
	}
	if r, _ := up.lastRequest(); r.URL.Path != "/first" {
		t.Errorf("the server got %s for %s: the fronted request reached it", r.URL.Path, r.Host)
	}
	ds := e.denials.all()
	if len(ds) != 1 || ds[0].Host != "blocked.test" || !strings.Contains(ds[0].Reason, "domain fronting") {
		t.Errorf("denials %+v, want blocked.test refused as domain fronting", ds)
	}

	for _, tc := range []struct{ name, host string }{
		{"another port", "allowed.test:8080"},
		{"an absolute URI's host", ""},
	} {
		_, _, c, br := e.connect(t, "allowed.test:80", "")
		req := "GET /x HTTP/1.1\r\nHost: " + tc.host + "\r\n\r\n"
		if tc.host == "" {
			req = "GET http://blocked.test/x HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
		}
		_, _ = io.WriteString(c, req)
		if resp, err := get(br); err == nil {
			t.Errorf("%s: answered %s", tc.name, resp.Status)
		}
	}
}

// TestConnectHTTPUpgrade: after a request that upgrades the connection (a WebSocket), what
// the client sends is the new protocol's, passed as it is.
func TestConnectHTTPUpgrade(t *testing.T) {
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
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		line, _ := br.ReadString('\n')
		_, _ = io.WriteString(c, "echo "+line)
	}()
	fn := newFakeNet(t)
	fn.name("ws.test", "203.0.113.10")
	fn.route("203.0.113.10:80", ln.Addr().String())
	e := startProxy(t, fn)
	e.rules.set(egress.Policy{Sandbox: []egress.Rule{allow("ws.test", sandbox)}})
	_, _, c, br := e.connect(t, "ws.test:80", "GET /ws HTTP/1.1\r\nHost: ws.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	_, _ = io.WriteString(c, "\x81 not http at all\n")
	if line, err := br.ReadString('\n'); err != nil || line != "echo \x81 not http at all\n" {
		t.Errorf("after the upgrade got %q, %v", line, err)
	}
}
