package egress_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/proxy/egress"
)

// upstream is an httptest server that records the last request it got.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	last *http.Request
	body string
}

func startUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.last, u.body = r, string(b)
		u.mu.Unlock()
		w.Header().Set("X-Upstream", "yes")
		w.Header().Set("Keep-Alive", "timeout=1")
		fmt.Fprintf(w, "hello from %s", r.URL.Path)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) lastRequest() (*http.Request, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last, u.body
}

func TestForwardPlainHTTP(t *testing.T) {
	up := startUpstream(t)
	fn := newFakeNet(t)
	fn.name("allowed.test", "203.0.113.10")
	fn.route("203.0.113.10:80", up.Listener.Addr().String())
	e := startProxy(t, fn)
	e.rules.set(egress.Policy{Global: []egress.Rule{allow("allowed.test", "global")}})

	t.Run("GET keeps path and query, drops hop-by-hop headers", func(t *testing.T) {
		resp, body := e.roundTrip(t, "GET http://allowed.test/a/b%2Fc?q=1&token=s3cr3t&x=%20y HTTP/1.1\r\n"+
			"Host: allowed.test\r\n"+
			"Connection: keep-alive, X-Hop\r\n"+
			"X-Hop: 1\r\n"+
			"Proxy-Connection: keep-alive\r\n"+
			"Proxy-Authorization: Basic c2VjcmV0\r\n"+
			"Keep-Alive: timeout=5\r\n"+
			"TE: trailers\r\n"+
			"Upgrade: websocket\r\n"+
			"X-Keep: yes\r\n"+
			"Accept-Encoding: gzip\r\n\r\n")
		if resp.StatusCode != 200 || body != "hello from /a/b/c" {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		if resp.Header.Get("X-Upstream") != "yes" || resp.Header.Get("Keep-Alive") != "" {
			t.Errorf("response headers %v: want X-Upstream kept and Keep-Alive dropped", resp.Header)
		}
		r, _ := up.lastRequest()
		if r.RequestURI != "/a/b%2Fc?q=1&token=s3cr3t&x=%20y" || r.Host != "allowed.test" {
			t.Errorf("upstream got %q for host %q", r.RequestURI, r.Host)
		}
		for _, h := range []string{"Connection", "X-Hop", "Proxy-Connection", "Proxy-Authorization", "Keep-Alive", "Te", "Upgrade", "User-Agent"} {
			if v, ok := r.Header[h]; ok {
				t.Errorf("upstream got %s: %q", h, v)
			}
		}
		if r.Header.Get("X-Keep") != "yes" || r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("upstream lost end-to-end headers: %v", r.Header)
		}
		if _, dialed := fn.calls(); len(dialed) == 0 || dialed[0] != "203.0.113.10:80" {
			t.Errorf("dialled %q, want the resolved 203.0.113.10:80", dialed)
		}
	})

	t.Run("POST body is forwarded", func(t *testing.T) {
		resp, _ := e.roundTrip(t, "POST http://allowed.test/upload HTTP/1.1\r\nHost: allowed.test\r\n"+
			"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
		if _, body := up.lastRequest(); resp.StatusCode != 200 || body != "hello world" {
			t.Errorf("got %d, upstream body %q", resp.StatusCode, body)
		}
	})

	t.Run("denied host", func(t *testing.T) {
		looked0, _ := fn.calls()
		resp, body := e.roundTrip(t, "GET http://denied.test:8080/x HTTP/1.1\r\nHost: denied.test:8080\r\n\r\n")
		if resp.StatusCode != 403 || !strings.Contains(body, "allow it with: paddock net allow denied.test:8080 --sandbox myrepo") {
			t.Errorf("got %d %q", resp.StatusCode, body)
		}
		if looked, _ := fn.calls(); len(looked) != len(looked0) {
			t.Errorf("a denied name was resolved: %q", looked[len(looked0):])
		}
		if d := e.denials.all(); len(d) == 0 || d[len(d)-1].Host != "denied.test" || d[len(d)-1].Port != 8080 {
			t.Errorf("denials %+v", d)
		}
	})

	for _, tt := range []struct{ name, raw, want string }{
		{"origin-form request", "GET /path HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "send absolute-form requests"},
		{"https in absolute form", "GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "use CONNECT for https"},
		{"bad host", "GET http://bad!host/ HTTP/1.1\r\nHost: bad!host\r\n\r\n", "bad host"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.roundTrip(t, tt.raw)
			if resp.StatusCode != 400 || !strings.Contains(body, tt.want) || strings.Count(strings.TrimSpace(body), "\n") != 0 {
				t.Errorf("got %d %q, want 400 with one line containing %q", resp.StatusCode, body, tt.want)
			}
		})
	}

	t.Run("log has one line per request and no secrets", func(t *testing.T) {
		e.stop() // Serve waits for every request, so every line is written
		logs := e.logs.String()
		for _, want := range []string{"sandbox=myrepo", "method=GET", "host=allowed.test", "port=80", "status=200", "bytes_down=", "duration=", "status=403"} {
			if !strings.Contains(logs, want) {
				t.Errorf("log lacks %q:\n%s", want, logs)
			}
		}
		for _, secret := range []string{"c2VjcmV0", "s3cr3t", "X-Keep"} {
			if strings.Contains(logs, secret) {
				t.Errorf("log contains %q:\n%s", secret, logs)
			}
		}
	})
}

// TestForwardStreams checks that a response reaches the sandbox as the server sends it: the first
// of three server-sent events must be readable before the server sends the last.
// TestRequestsObserved: every request the policy decides reaches OnRequest, allowed or
// refused, with the plain request's path but never its query (it may carry a secret).
func TestRequestsObserved(t *testing.T) {
	up := startUpstream(t)
	fn := newFakeNet(t)
	fn.name("allowed.test", "203.0.113.10")
	fn.route("203.0.113.10:80", up.Listener.Addr().String())
	e := startProxy(t, fn)
	e.rules.set(egress.Policy{Global: []egress.Rule{allow("allowed.test", "global")}})

	e.roundTrip(t, "GET http://allowed.test/a/b?token=s3cr3t HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
	e.roundTrip(t, "CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n")
	got := e.seen.all()
	if len(got) != 2 {
		t.Fatalf("OnRequest got %d requests, want 2: %+v", len(got), got)
	}
	if r := got[0]; !r.Allowed || r.Method != "GET" || r.Host != "allowed.test" || r.Port != 80 || r.Path != "/a/b" || r.Sandbox != sandbox {
		t.Errorf("allowed request seen as %+v", r)
	}
	if r := got[1]; r.Allowed || r.Method != "CONNECT" || r.Host != "denied.test" || r.Port != 443 || r.Path != "" || r.Reason == "" {
		t.Errorf("refused request seen as %+v", r)
	}
}

func TestForwardStreams(t *testing.T) {
	firstRead := make(chan struct{})
	var lastSent atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		fmt.Fprint(w, "data: 1\n\n")
		_ = rc.Flush()
		select { // a buffering proxy never lets the client read event 1; go on after a while anyway
		case <-firstRead:
		case <-time.After(3 * time.Second):
		}
		time.Sleep(100 * time.Millisecond)
		fmt.Fprint(w, "data: 2\n\n")
		_ = rc.Flush()
		time.Sleep(100 * time.Millisecond)
		lastSent.Store(true)
		fmt.Fprint(w, "data: 3\n\n")
	}))
	t.Cleanup(srv.Close)
	fn := newFakeNet(t)
	fn.name("stream.test", "203.0.113.10")
	fn.route("203.0.113.10:80", srv.Listener.Addr().String())
	e := startProxy(t, fn)
	e.rules.set(egress.Policy{Sandbox: []egress.Rule{allow("stream.test", sandbox)}})

	resp, err := e.proxyClient(t).Get("http://stream.test/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	readEvent := func() string {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read event: %v", err)
		}
		if blank, err := br.ReadString('\n'); err != nil || blank != "\n" {
			t.Fatalf("event not followed by a blank line: %q, %v", blank, err)
		}
		return strings.TrimSpace(line)
	}
	if got := readEvent(); got != "data: 1" {
		t.Fatalf("first event %q", got)
	}
	if lastSent.Load() {
		t.Errorf("the first event arrived only after the server sent the last: the proxy buffers")
	}
	close(firstRead)
	for _, want := range []string{"data: 2", "data: 3"} {
		if got := readEvent(); got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after the last event: %q, %v", rest, err)
	}
}
