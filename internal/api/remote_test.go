package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/proxy/keyring"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/store"
)

// remoteTest is the real API handler (over a real store, with no backends) served on a
// real TCP listener behind Remote, and the same handler as the unix socket serves it.
type remoteTest struct {
	t     *testing.T
	srv   *Server
	local http.Handler // what the unix socket serves
	ts    *httptest.Server
	// stopped counts calls of the daemon's shutdown.
	stopped int

	mu    sync.Mutex
	clock time.Time
}

// fixedListener stands in for the daemon's TCP listener: it says the test server serves.
type fixedListener struct{ url string }

func (l fixedListener) Serve(context.Context, WebRequest) (WebStatus, error) {
	return WebStatus{Serving: true, URL: l.url}, nil
}
func (l fixedListener) Stop(context.Context) (WebStatus, error) {
	return WebStatus{Serving: true, URL: l.url}, nil
}
func (l fixedListener) Status() WebStatus { return WebStatus{Serving: true, URL: l.url} }

func newRemoteTest(t *testing.T, tls bool) *remoteTest {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.DiscardHandler)
	svc := sandbox.New(sandbox.Options{Store: st, Backends: map[string]backend.Backend{}, Logger: log})
	rt := &remoteTest{t: t, clock: time.Now()}
	rt.srv = NewServer(svc, session.New(svc, keyring.New(nil), log), Services{Keys: keyring.New(nil), Net: svc.Net()}, Version{Version: "test"}, log, func() { rt.stopped++ })
	rt.ts = httptest.NewUnstartedServer(nil)
	if tls {
		rt.ts.StartTLS()
	} else {
		rt.ts.Start()
	}
	t.Cleanup(rt.ts.Close)
	rt.srv.EnableWeb(fixedListener{rt.ts.URL})
	rt.srv.web.auth.now = func() time.Time {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return rt.clock
	}
	rt.local = rt.srv.Handler()
	rt.ts.Config.Handler = rt.srv.Remote(RemoteOptions{API: rt.local, TLS: tls, Loopback: true})
	return rt
}

func (rt *remoteTest) advance(d time.Duration) {
	rt.mu.Lock()
	rt.clock = rt.clock.Add(d)
	rt.mu.Unlock()
}

// onSocket makes a request as the unix socket's client would, and decodes the answer.
func (rt *remoteTest) onSocket(method, path, body string, out any) int {
	rt.t.Helper()
	rec := httptest.NewRecorder()
	rt.local.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			rt.t.Fatalf("%s %s: %v: %s", method, path, err, rec.Body)
		}
	}
	return rec.Code
}

func (rt *remoteTest) token(name string, readOnly bool) string {
	rt.t.Helper()
	var tok NewToken
	body, _ := json.Marshal(TokenRequest{Name: name, ReadOnly: readOnly})
	if code := rt.onSocket("POST", "/v1/tokens", string(body), &tok); code != http.StatusOK || !strings.HasPrefix(tok.Token, TokenPrefix) {
		rt.t.Fatalf("create token: %d %+v", code, tok)
	}
	return tok.Token
}

func (rt *remoteTest) loginURL() string {
	rt.t.Helper()
	var st WebStatus
	if code := rt.onSocket("POST", "/v1/web/login", "", &st); code != http.StatusOK || st.LoginURL == "" {
		rt.t.Fatalf("login URL: %d %+v", code, st)
	}
	return st.LoginURL
}

// client is an HTTP client of the TCP listener that does not follow redirects.
func (rt *remoteTest) client() *http.Client {
	c := *rt.ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

type answer struct {
	status int
	header http.Header
	body   string
	err    ErrorBody
}

// do sends a request to the TCP listener; hdr holds header pairs.
func (rt *remoteTest) do(method, path, body string, hdr ...string) answer {
	rt.t.Helper()
	req, err := http.NewRequest(method, rt.ts.URL+path, strings.NewReader(body))
	if err != nil {
		rt.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := rt.client().Do(req)
	if err != nil {
		rt.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(data)}
	json.Unmarshal(data, &a.err)
	return a
}

func (a answer) expect(t *testing.T, status int, kind string) {
	t.Helper()
	if a.status != status || string(a.err.Error.Kind) != kind {
		t.Fatalf("got %d %q, want %d %q: %s", a.status, a.err.Error.Kind, status, kind, a.body)
	}
}

func bearer(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

func TestRemoteBearerTokens(t *testing.T) {
	rt := newRemoteTest(t, false)

	a := rt.do("GET", "/v1/sandboxes", "")
	a.expect(t, http.StatusUnauthorized, "unauthorized")
	if !strings.Contains(a.err.Error.Hint, "paddock token create") {
		t.Errorf("the 401 does not say how to get a token: %s", a.body)
	}

	tok := rt.token("phone", false)
	a = rt.do("GET", "/v1/sandboxes", "", bearer(tok)...)
	if a.status != http.StatusOK || strings.TrimSpace(a.body) != "[]" {
		t.Fatalf("list with the token: %d %s", a.status, a.body)
	}
	if a.header.Get("Content-Security-Policy") == "" || a.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("API answers lack their security headers: %v", a.header)
	}
	var list []TokenInfo
	rt.onSocket("GET", "/v1/tokens", "", &list)
	if len(list) != 1 || list[0].Name != "phone" || list[0].LastUsed == nil {
		t.Errorf("the token's use is not recorded: %+v", list)
	}

	rt.do("GET", "/v1/sandboxes", "", bearer(tok+"x")...).expect(t, http.StatusUnauthorized, "unauthorized")
	rt.do("GET", "/v1/sandboxes", "", bearer(strings.TrimPrefix(tok, TokenPrefix))...).expect(t, http.StatusUnauthorized, "unauthorized")
	rt.do("GET", "/v1/sandboxes", "", "Authorization", "Basic "+tok).expect(t, http.StatusUnauthorized, "unauthorized")

	// A full token still cannot manage tokens, the listener or the daemon, nor build
	// images or make sandboxes from paths of the daemon's host: those stay on the unix
	// socket.
	rt.do("POST", "/v1/tokens", `{"name":"more"}`, bearer(tok)...).expect(t, http.StatusForbidden, "forbidden")
	rt.do("GET", "/v1/tokens", "", bearer(tok)...).expect(t, http.StatusForbidden, "forbidden")
	rt.do("DELETE", "/v1/web", "", bearer(tok)...).expect(t, http.StatusForbidden, "forbidden")
	rt.do("POST", "/v1/web/login", "", bearer(tok)...).expect(t, http.StatusForbidden, "forbidden")
	rt.do("POST", "/v1/daemon/stop", "", bearer(tok)...).expect(t, http.StatusForbidden, "forbidden")
	rt.do("POST", "/v1/sandboxes", "", append(bearer(tok), "X-Paddock-Request", `{"name":"x","rootfs":"/srv/root"}`)...).expect(t, http.StatusForbidden, "forbidden")
	rt.do("POST", "/v1/sandboxes", "", append(bearer(tok), "X-Paddock-Request", `{"name":"x","devcontainer":{}}`)...).expect(t, http.StatusForbidden, "forbidden")
	rt.do("POST", "/v1/images/build", `{"dockerfile":"/etc/Dockerfile","context":"/"}`, bearer(tok)...).expect(t, http.StatusForbidden, "forbidden")
	if rt.stopped != 0 {
		t.Fatal("a TCP caller stopped the daemon")
	}
	// What it may do reaches the handler: here, a sandbox that does not exist.
	rt.do("POST", "/v1/sandboxes/ghost/stop", "", bearer(tok)...).expect(t, http.StatusNotFound, "not_found")

	if code := rt.onSocket("DELETE", "/v1/tokens/phone", "", nil); code != http.StatusNoContent {
		t.Fatalf("revoke: %d", code)
	}
	rt.do("GET", "/v1/sandboxes", "", bearer(tok)...).expect(t, http.StatusUnauthorized, "unauthorized")
	if code := rt.onSocket("DELETE", "/v1/tokens/phone", "", nil); code != http.StatusNotFound {
		t.Fatalf("revoke twice: %d", code)
	}
}

func TestRemoteReadOnlyToken(t *testing.T) {
	rt := newRemoteTest(t, false)
	ro := rt.token("watcher", true)

	if a := rt.do("GET", "/v1/sandboxes", "", bearer(ro)...); a.status != http.StatusOK {
		t.Fatalf("a read-only token cannot list: %d %s", a.status, a.body)
	}
	rt.do("GET", "/v1/sandboxes/ghost", "", bearer(ro)...).expect(t, http.StatusNotFound, "not_found")
	for _, w := range []struct{ method, path, body string }{
		{"POST", "/v1/sandboxes/ghost/stop", ""},
		{"POST", "/v1/sandboxes/ghost/start", ""},
		{"DELETE", "/v1/sandboxes/ghost?force=true", ""},
		{"POST", "/v1/sandboxes/ghost/sessions/main/send", `{"text":"rm -rf /"}`},
		{"POST", "/v1/net/rules", `{"pattern":"example.com","action":"allow"}`},
		{"PUT", "/v1/sandboxes/ghost/files?path=/workspace/x", "data"},
	} {
		a := rt.do(w.method, w.path, w.body, bearer(ro)...)
		a.expect(t, http.StatusForbidden, "forbidden")
		if !strings.Contains(a.err.Error.Message, "read-only") {
			t.Errorf("%s %s: the refusal does not say why: %s", w.method, w.path, a.body)
		}
	}
	// exec is a GET that runs a command: refused too, however the path is spelled.
	for _, p := range []string{"/v1/sandboxes/ghost/exec", "/v1/sandboxes/a%2Fb/exec", "/v1/sandboxes/ghost/%65xec"} {
		rt.do("GET", p, "", bearer(ro)...).expect(t, http.StatusForbidden, "forbidden")
	}
	ws := "ws" + strings.TrimPrefix(rt.ts.URL, "http") + "/v1/sandboxes/ghost/exec"
	_, resp, err := websocket.Dial(context.Background(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + ro}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a read-only token opened exec: %v %v", err, resp)
	}
}

// signIn opens the login URL and presses its button; it returns the session cookie.
func (rt *remoteTest) signIn() *http.Cookie {
	rt.t.Helper()
	u := rt.loginURL()
	code := strings.TrimPrefix(u, rt.ts.URL+"/login?code=")
	a := rt.do("GET", "/login?code="+code, "")
	if a.status != http.StatusOK || !strings.Contains(a.body, `name="code" value="`+code+`"`) {
		rt.t.Fatalf("login page: %d %s", a.status, a.body)
	}
	a = rt.do("POST", "/login", "code="+code, "Content-Type", "application/x-www-form-urlencoded", "Origin", rt.ts.URL)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/" {
		rt.t.Fatalf("login: %d %v %s", a.status, a.header, a.body)
	}
	resp := &http.Response{Header: a.header}
	for _, c := range resp.Cookies() {
		return c
	}
	rt.t.Fatalf("login set no cookie: %v", a.header)
	return nil
}

func TestRemoteLoginCode(t *testing.T) {
	rt := newRemoteTest(t, false)

	u := rt.loginURL()
	code := strings.TrimPrefix(u, rt.ts.URL+"/login?code=")
	if len(code) != 32 {
		t.Fatalf("the login code is not 128 bits in hex: %q", u)
	}
	// Opening the URL (as a link preview would) neither signs in nor uses the code.
	for range 2 {
		a := rt.do("GET", "/login?code="+code, "")
		if a.status != http.StatusOK || a.header.Get("Set-Cookie") != "" {
			t.Fatalf("GET /login: %d %v", a.status, a.header)
		}
	}
	a := rt.do("POST", "/login", "code="+code, "Content-Type", "application/x-www-form-urlencoded", "Origin", rt.ts.URL)
	if a.status != http.StatusSeeOther {
		t.Fatalf("login: %d %s", a.status, a.body)
	}
	c := (&http.Response{Header: a.header}).Cookies()[0]
	if c.Name != "paddock_session" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" || len(c.Value) < 43 {
		t.Fatalf("session cookie: %+v", c)
	}
	if strings.Contains(c.Value, code) {
		t.Fatal("the cookie holds the login code")
	}
	ck := []string{"Cookie", c.Name + "=" + c.Value}
	if a := rt.do("GET", "/v1/sandboxes", "", ck...); a.status != http.StatusOK {
		t.Fatalf("the cookie does not authenticate: %d %s", a.status, a.body)
	}
	if a := rt.do("GET", "/", "", ck...); a.status != http.StatusOK || !strings.Contains(a.body, "signed in") {
		t.Fatalf("GET / signed in: %d %s", a.status, a.body)
	}
	if a := rt.do("GET", "/", ""); a.status != http.StatusUnauthorized || !strings.Contains(a.body, "paddock token create") {
		t.Fatalf("GET / without auth: %d %s", a.status, a.body)
	}

	// Single use.
	rt.do("POST", "/login", "code="+code, "Content-Type", "application/x-www-form-urlencoded").expect(t, http.StatusUnauthorized, "")
	if a := rt.do("GET", "/login?code="+code, ""); a.status != http.StatusUnauthorized {
		t.Fatalf("a used code still shows its page: %d", a.status)
	}

	// Ten minutes.
	u = rt.loginURL()
	code = strings.TrimPrefix(u, rt.ts.URL+"/login?code=")
	rt.advance(LoginCodeTTL + time.Second)
	if a := rt.do("POST", "/login", "code="+code, "Content-Type", "application/x-www-form-urlencoded"); a.status != http.StatusUnauthorized {
		t.Fatalf("an expired code signed in: %d", a.status)
	}

	// The session lasts SessionTTL.
	rt.advance(SessionTTL)
	rt.do("GET", "/v1/sandboxes", "", ck...).expect(t, http.StatusUnauthorized, "unauthorized")
}

func TestRemoteLogout(t *testing.T) {
	rt := newRemoteTest(t, false)
	c := rt.signIn()
	ck := []string{"Cookie", c.Name + "=" + c.Value}
	if a := rt.do("POST", "/logout", "", append(ck, "Origin", rt.ts.URL)...); a.status != http.StatusNoContent {
		t.Fatalf("logout: %d %s", a.status, a.body)
	}
	rt.do("GET", "/v1/sandboxes", "", ck...).expect(t, http.StatusUnauthorized, "unauthorized")

	// paddock web --stop signs every browser out.
	c = rt.signIn()
	ck = []string{"Cookie", c.Name + "=" + c.Value}
	rt.onSocket("DELETE", "/v1/web", "", nil)
	rt.do("GET", "/v1/sandboxes", "", ck...).expect(t, http.StatusUnauthorized, "unauthorized")
}

func TestRemoteCookieCSRF(t *testing.T) {
	rt := newRemoteTest(t, false)
	c := rt.signIn()
	ck := []string{"Cookie", c.Name + "=" + c.Value}
	for _, tc := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"no Origin", nil, http.StatusForbidden},
		{"another site", []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"another port", []string{"Origin", "http://127.0.0.1:1"}, http.StatusForbidden},
		{"https twin", []string{"Origin", "https" + strings.TrimPrefix(rt.ts.URL, "http")}, http.StatusForbidden},
		{"null", []string{"Origin", "null"}, http.StatusForbidden},
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"same-site fetch", []string{"Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		// These pass the checks and reach the handler: the sandbox does not exist.
		{"own Origin", []string{"Origin", rt.ts.URL}, http.StatusNotFound},
		{"same-origin fetch", []string{"Sec-Fetch-Site", "same-origin"}, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := rt.do("POST", "/v1/sandboxes/ghost/stop", "", append(ck, tc.hdr...)...)
			if a.status != tc.want {
				t.Fatalf("got %d, want %d: %s", a.status, tc.want, a.body)
			}
		})
	}
	// A GET needs no Origin: it changes nothing.
	if a := rt.do("GET", "/v1/sandboxes", "", ck...); a.status != http.StatusOK {
		t.Fatalf("GET with the cookie: %d", a.status)
	}
	// A token is not sent by browsers on their own, but a foreign Origin is refused for it too.
	tok := rt.token("cli", false)
	rt.do("POST", "/v1/sandboxes/ghost/stop", "", append(bearer(tok), "Origin", "http://evil.example")...).expect(t, http.StatusForbidden, "forbidden")
	rt.do("POST", "/v1/sandboxes/ghost/stop", "", bearer(tok)...).expect(t, http.StatusNotFound, "not_found")
}

func TestRemoteWebSocketOrigin(t *testing.T) {
	rt := newRemoteTest(t, false)
	tok := rt.token("cli", false)
	c := rt.signIn()
	ws := "ws" + strings.TrimPrefix(rt.ts.URL, "http") + "/v1/sandboxes/ghost/exec"
	dial := func(hdr http.Header) int {
		t.Helper()
		conn, resp, err := websocket.Dial(context.Background(), ws, &websocket.DialOptions{HTTPHeader: hdr})
		if err == nil {
			conn.CloseNow()
			t.Fatalf("the exec WebSocket opened with %v", hdr)
		}
		if resp == nil {
			t.Fatalf("no answer: %v", err)
		}
		return resp.StatusCode
	}
	cookie := c.Name + "=" + c.Value
	for _, tc := range []struct {
		name string
		hdr  http.Header
		want int
	}{
		{"token, foreign Origin", http.Header{"Authorization": {"Bearer " + tok}, "Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"cookie, foreign Origin", http.Header{"Cookie": {cookie}, "Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"cookie, no Origin", http.Header{"Cookie": {cookie}}, http.StatusForbidden},
		{"nothing", http.Header{"Origin": {rt.ts.URL}}, http.StatusUnauthorized},
		// Past the checks, the handler answers: no such sandbox.
		{"cookie, own Origin", http.Header{"Cookie": {cookie}, "Origin": {rt.ts.URL}}, http.StatusNotFound},
		{"token, no Origin", http.Header{"Authorization": {"Bearer " + tok}}, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dial(tc.hdr); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestRemoteRateLimit(t *testing.T) {
	rt := newRemoteTest(t, false)
	tok := rt.token("cli", false)
	for i := range failBurst {
		if a := rt.do("GET", "/v1/sandboxes", "", bearer(TokenPrefix+"guess")...); a.status != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i+1, a.status)
		}
	}
	a := rt.do("GET", "/v1/sandboxes", "", bearer(TokenPrefix+"guess")...)
	a.expect(t, http.StatusTooManyRequests, "too_many_requests")
	if a.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	// Even a right token waits: a guess that succeeds is not told apart.
	rt.do("GET", "/v1/sandboxes", "", bearer(tok)...).expect(t, http.StatusTooManyRequests, "too_many_requests")
	code := strings.TrimPrefix(rt.loginURL(), rt.ts.URL+"/login?code=")
	if a := rt.do("GET", "/login?code="+code, ""); a.status != http.StatusTooManyRequests {
		t.Fatalf("login while limited: %d", a.status)
	}
	rt.advance(failRefill)
	if a := rt.do("GET", "/v1/sandboxes", "", bearer(tok)...); a.status != http.StatusOK {
		t.Fatalf("after the refill: %d %s", a.status, a.body)
	}
	// Requests with no credentials at all are not attempts.
	rt.do("GET", "/v1/sandboxes", "").expect(t, http.StatusUnauthorized, "unauthorized")
}

func TestRemoteLoopbackHost(t *testing.T) {
	rt := newRemoteTest(t, false)
	tok := rt.token("cli", false)
	port := strings.TrimPrefix(rt.ts.URL, "http://127.0.0.1:")
	// A page at http://rebound.example:PORT whose name now points at 127.0.0.1.
	rt.do("GET", "/v1/sandboxes", "", append(bearer(tok), "Host", "rebound.example:"+port)...).expect(t, http.StatusForbidden, "forbidden")
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port} {
		if a := rt.do("GET", "/v1/sandboxes", "", append(bearer(tok), "Host", host, "Origin", "http://"+host)...); a.status != http.StatusOK {
			t.Fatalf("Host %s: %d %s", host, a.status, a.body)
		}
	}
}

func TestRemoteTLSCookie(t *testing.T) {
	rt := newRemoteTest(t, true)
	c := rt.signIn()
	if c.Name != "__Host-paddock_session" || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie over TLS: %+v", c)
	}
	a := rt.do("POST", "/v1/sandboxes/ghost/stop", "", "Cookie", c.Name+"="+c.Value, "Origin", rt.ts.URL)
	a.expect(t, http.StatusNotFound, "not_found")
	// The http:// twin of the origin is another origin.
	u, _ := url.Parse(rt.ts.URL)
	rt.do("POST", "/v1/sandboxes/ghost/stop", "", "Cookie", c.Name+"="+c.Value, "Origin", "http://"+u.Host).expect(t, http.StatusForbidden, "forbidden")
}

// TestRemotePreviewKeys covers the path form's preview keys: a signed-in browser that
// opens /preview/SANDBOX/PORT/ as a page is sent on to the same address with a key in
// it, which admits what that page asks for without the UI's cookie (its pages run in an
// opaque origin, which the cookie is not sent from), for that sandbox and port alone, as
// long as the browser's session lasts.
func TestRemotePreviewKeys(t *testing.T) {
	rt := newRemoteTest(t, false)
	ctx := context.Background()
	for _, name := range []string{"web", "other"} {
		if err := rt.srv.svc.Store().CreateSandbox(ctx, store.Sandbox{ID: "id-" + name, Name: name, Backend: "none", State: "stopped"}); err != nil {
			t.Fatal(err)
		}
	}
	c := rt.signIn()
	ck := []string{"Cookie", c.Name + "=" + c.Value}
	nav := []string{"Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document"}

	a := rt.do("GET", "/preview/web/8123/docs/a%20b.html?x=1", "", append(ck, nav...)...)
	loc := a.header.Get("Location")
	m := regexp.MustCompile(`^/preview/web/8123/~pv-([A-Za-z0-9_-]{43})/docs/a%20b\.html\?x=1$`).FindStringSubmatch(loc)
	if a.status != http.StatusTemporaryRedirect || m == nil {
		t.Fatalf("opening the path form: %d, Location %q", a.status, loc)
	}
	key := m[1]
	if again := rt.do("GET", "/preview/web/8123/", "", append(ck, nav...)...).header.Get("Location"); again != "/preview/web/8123/~pv-"+key+"/" {
		t.Errorf("opening it again went to %q, not the same key", again)
	}
	other := rt.do("GET", "/preview/web/8124/", "", append(ck, nav...)...).header.Get("Location")
	if !strings.HasPrefix(other, "/preview/web/8124/~pv-") || strings.Contains(other, key) {
		t.Errorf("another port's key: %q", other)
	}

	// Without any cookie, as the page's stylesheet or fetch asks (Origin: null): the key
	// admits it to the sandbox (whose backend this daemon lacks), and its answer may be read.
	sub := []string{"Sec-Fetch-Mode", "cors", "Sec-Fetch-Dest", "empty", "Sec-Fetch-Site", "cross-site", "Origin", "null"}
	a = rt.do("GET", "/preview/web/8123/~pv-"+key+"/data.json", "", sub...)
	if a.status != http.StatusBadGateway || !strings.Contains(a.body, "Nothing in sandbox web answered") {
		t.Fatalf("a keyed fetch: %d %s", a.status, a.body)
	}
	if got := a.header.Get("Access-Control-Allow-Origin"); got != "null" {
		t.Errorf("a keyed fetch's Access-Control-Allow-Origin: %q", got)
	}
	a = rt.do("OPTIONS", "/preview/web/8123/~pv-"+key+"/api", "", append(sub, "Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "content-type")...)
	if a.status != http.StatusNoContent || a.header.Get("Access-Control-Allow-Methods") != "PUT" || a.header.Get("Access-Control-Allow-Headers") != "content-type" {
		t.Errorf("a keyed preflight: %d %v", a.status, a.header)
	}

	// The key is for its sandbox and port alone, never the UI or its API, and not for
	// the UI's own pages to load files from.
	for _, p := range []string{"/preview/web/8124/~pv-" + key + "/", "/preview/other/8123/~pv-" + key + "/", "/preview/web/8123/~pv-" + strings.Repeat("A", 43) + "/"} {
		if a := rt.do("GET", p, "", sub...); a.status != http.StatusUnauthorized {
			t.Errorf("GET %s: %d, want 401", p, a.status)
		}
	}
	if a := rt.do("GET", "/v1/sandboxes/~pv-"+key, ""); a.status != http.StatusUnauthorized {
		t.Errorf("the key as an API path: %d", a.status)
	}
	if a := rt.do("GET", "/preview/web/8123/~pv-"+key+"/x.css", "", "Sec-Fetch-Site", "same-origin", "Sec-Fetch-Dest", "style"); a.status != http.StatusForbidden {
		t.Errorf("a keyed stylesheet for the UI's own page: %d, want 403", a.status)
	}
	if a := rt.do("GET", "/preview/web/8123/~pv-"+key+"/", "", "Origin", "http://evil.example"); a.status != http.StatusForbidden {
		t.Errorf("a keyed request from another site: %d, want 403", a.status)
	}

	// Signing out ends the key: a page opened with it goes back to the unkeyed address
	// (where the browser signs in again), anything else is refused.
	if a := rt.do("POST", "/logout", "", append(ck, "Origin", rt.ts.URL)...); a.status != http.StatusNoContent {
		t.Fatalf("logout: %d", a.status)
	}
	if a := rt.do("GET", "/preview/web/8123/~pv-"+key+"/data.json", "", sub...); a.status != http.StatusUnauthorized {
		t.Errorf("the key after signing out: %d, want 401", a.status)
	}
	a = rt.do("GET", "/preview/web/8123/~pv-"+key+"/docs/?x=1", "", nav...)
	if a.status != http.StatusTemporaryRedirect || a.header.Get("Location") != "/preview/web/8123/docs/?x=1" {
		t.Errorf("opening a page with the ended key: %d, Location %q", a.status, a.header.Get("Location"))
	}

	// paddock web --stop signs every browser out, and ends every key. A key also ends
	// after 12 hours, and the session's next opening of the page makes another.
	c = rt.signIn()
	ck = []string{"Cookie", c.Name + "=" + c.Value}
	key2 := rt.do("GET", "/preview/web/8123/", "", append(ck, nav...)...).header.Get("Location")
	if a := rt.do("GET", key2, "", sub...); a.status != http.StatusBadGateway {
		t.Fatalf("a new session's key: %d %s", a.status, a.body)
	}
	rt.onSocket("DELETE", "/v1/web", "", nil)
	if a := rt.do("GET", key2, "", sub...); a.status != http.StatusUnauthorized {
		t.Errorf("a key after paddock web --stop: %d, want 401", a.status)
	}
	c = rt.signIn()
	ck = []string{"Cookie", c.Name + "=" + c.Value}
	key3 := rt.do("GET", "/preview/web/8123/", "", append(ck, nav...)...).header.Get("Location")
	if a := rt.do("GET", key3, "", sub...); a.status != http.StatusBadGateway {
		t.Fatalf("a third session's key: %d %s", a.status, a.body)
	}
	rt.advance(previewSessionTTL + time.Minute)
	if a := rt.do("GET", key3, "", sub...); a.status != http.StatusUnauthorized {
		t.Errorf("a key after 12 hours: %d, want 401", a.status)
	}
	if key4 := rt.do("GET", "/preview/web/8123/", "", append(ck, nav...)...).header.Get("Location"); key4 == key3 || !strings.Contains(key4, "/~pv-") {
		t.Errorf("opening the page after its key ended: %q (the old one was %q)", key4, key3)
	}

	// A token's caller (a script, not a browser) is served without a redirect.
	tok := rt.token("cli", false)
	if a := rt.do("GET", "/preview/web/8123/", "", append(bearer(tok), nav...)...); a.status != http.StatusBadGateway {
		t.Errorf("the path form with a token: %d %s", a.status, a.body)
	}
}

// TestRemotePreviewKeyGuesses checks that wrong preview keys count as failed attempts.
func TestRemotePreviewKeyGuesses(t *testing.T) {
	rt := newRemoteTest(t, false)
	for i := range failBurst + 1 {
		a := rt.do("GET", "/preview/web/8123/~pv-"+strings.Repeat("B", 43)+"/", "")
		if want := http.StatusUnauthorized; i == failBurst {
			want = http.StatusTooManyRequests
			if a.status != want {
				t.Fatalf("guess %d: %d, want %d", i+1, a.status, want)
			}
		} else if a.status != want {
			t.Fatalf("guess %d: %d, want %d", i+1, a.status, want)
		}
	}
}
