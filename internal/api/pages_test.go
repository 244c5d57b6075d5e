package api

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/webui"
)

// TestRemotePublicFiles: the web UI's manifest and the icons it names are served to a
// browser without its cookie (a phone adding the UI to its home screen fetches them
// so); nothing else of the UI or the API is.
func TestRemotePublicFiles(t *testing.T) {
	rt := newRemoteTest(t, false)
	rt.ts.Config.Handler = rt.srv.Remote(RemoteOptions{API: rt.local, Loopback: true, UI: webui.Handler()})

	a := rt.do("GET", "/manifest.webmanifest", "")
	var m struct {
		Name  string `json:"name"`
		Icons []struct {
			Src string `json:"src"`
		} `json:"icons"`
	}
	if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &m) != nil || m.Name != "paddock" || len(m.Icons) == 0 {
		t.Fatalf("GET /manifest.webmanifest without a cookie: %d %s", a.status, a.body)
	}
	for _, ic := range m.Icons {
		if a := rt.do("GET", ic.Src, ""); a.status != http.StatusOK || !strings.HasPrefix(a.header.Get("Content-Type"), "image/") {
			t.Errorf("GET %s (an icon of the manifest) without a cookie: %d %s", ic.Src, a.status, a.header.Get("Content-Type"))
		}
	}
	if a := rt.do("HEAD", "/manifest.webmanifest", ""); a.status != http.StatusOK {
		t.Errorf("HEAD /manifest.webmanifest: %d", a.status)
	}
	for _, p := range []string{"/", "/index.html", "/sw.js", "/licenses.txt", "/s/repo", "/v1/sandboxes", "/manifest.webmanifest/", "/x/../manifest.webmanifest", "/v1/../icon.svg/x"} {
		if a := rt.do("GET", p, ""); a.status != http.StatusUnauthorized {
			t.Errorf("GET %s without a cookie: %d, want 401", p, a.status)
		}
	}
	if a := rt.do("POST", "/manifest.webmanifest", "", "Origin", rt.ts.URL); a.status != http.StatusUnauthorized {
		t.Errorf("POST /manifest.webmanifest without a cookie: %d, want 401", a.status)
	}
}

// TestRemotePages: the sign-in and error pages have the UI's look (their style sheet
// admitted by its hash, nothing else), show commands as code rather than in backticks,
// and escape what they show.
func TestRemotePages(t *testing.T) {
	rt := newRemoteTest(t, false)
	sum := sha256.Sum256([]byte(pageStyle))
	hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"

	u := rt.loginURL()
	login := rt.do("GET", strings.TrimPrefix(u, rt.ts.URL), "")
	used := rt.do("GET", "/login?code=0123456789abcdef0123456789abcdef", "")
	for _, a := range []answer{login, used, rt.do("GET", "/", "")} {
		csp := a.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "style-src "+hash) || strings.Contains(csp, "script-src") {
			t.Errorf("CSP %q does not admit the page's style sheet alone", csp)
		}
		if !strings.Contains(a.body, "<style>"+pageStyle+"</style>") || !strings.Contains(a.body, "<svg") {
			t.Errorf("a page without the UI's look: %s", a.body)
		}
		if strings.Contains(a.body, "`") {
			t.Errorf("a page shows backticks: %s", a.body)
		}
	}
	if !strings.Contains(login.body, `<button type="submit">Sign in</button>`) {
		t.Errorf("the sign-in page has no button: %s", login.body)
	}
	if used.status != http.StatusUnauthorized || !strings.Contains(used.body, "<code>paddock web</code>") {
		t.Errorf("the page for a used login link does not show its command as code: %d %s", used.status, used.body)
	}
	for in, want := range map[string]string{
		"run `paddock web` now":  "run <code>paddock web</code> now",
		"a `<b>` and `unclosed":  "a <code>&lt;b&gt;</code> and `unclosed",
		"no code <i>":            "no code &lt;i&gt;",
		"`at the start` and end": "<code>at the start</code> and end",
	} {
		if got := string(codeText(in)); got != want {
			t.Errorf("codeText(%q) = %q, want %q", in, got, want)
		}
	}
}
