package webui

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, path string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, req)
	return w.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// nonceRE matches the nonce attribute the page's script tags carry.
var nonceRE = regexp.MustCompile(`nonce="([A-Za-z0-9+/=]+)" `)

// withoutNonce is a page with its scripts' nonce taken out, which differs with every answer.
func withoutNonce(page string) string { return nonceRE.ReplaceAllString(page, "") }

// index is the page (without its nonce) and the assets it names.
func index(t *testing.T) (page string, script, style string) {
	t.Helper()
	page = withoutNonce(body(t, get(t, "/")))
	m := regexp.MustCompile(`<script type="module" src="(/assets/main-[A-Z0-9]+\.js)"`).FindStringSubmatch(page)
	c := regexp.MustCompile(`<link rel="stylesheet" href="(/assets/main-[A-Z0-9]+\.css)"`).FindStringSubmatch(page)
	if m == nil || c == nil {
		t.Fatalf("index.html names no hashed script and stylesheet:\n%s", page)
	}
	return page, m[1], c[1]
}

func TestEmbedIsTheBuiltUI(t *testing.T) {
	h := load()
	if len(h.files) < 4 {
		t.Fatalf("only %d files embedded: run make web", len(h.files))
	}
	page, script, style := index(t)
	if !strings.Contains(page, `<div id="app">`) {
		t.Fatalf("index.html has no app root:\n%s", page)
	}
	for _, p := range []string{script, style, "/icon.svg", "/manifest.webmanifest", "/licenses.txt"} {
		if resp := get(t, p); resp.StatusCode != http.StatusOK || resp.ContentLength == 0 {
			t.Errorf("GET %s: %d, %d bytes", p, resp.StatusCode, resp.ContentLength)
		}
	}
	if js := body(t, get(t, script)); !strings.Contains(js, "/v1/sandboxes") {
		t.Errorf("%s does not call the API: not the UI's bundle?", script)
	}
}

func TestContentTypesAndCaching(t *testing.T) {
	_, script, style := index(t)
	for _, tc := range []struct {
		path, ctype, cache string
	}{
		{"/", "text/html; charset=utf-8", "no-cache"},
		{script, "text/javascript; charset=utf-8", "public, max-age=31536000, immutable"},
		{style, "text/css; charset=utf-8", "public, max-age=31536000, immutable"},
		{"/icon.svg", "image/svg+xml", "no-cache"},
		{"/manifest.webmanifest", "application/manifest+json", "no-cache"},
		{"/licenses.txt", "text/plain; charset=utf-8", "no-cache"},
	} {
		resp := get(t, tc.path)
		if got := resp.Header.Get("Content-Type"); got != tc.ctype {
			t.Errorf("%s: Content-Type %q, want %q", tc.path, got, tc.ctype)
		}
		if got := resp.Header.Get("Cache-Control"); got != tc.cache {
			t.Errorf("%s: Cache-Control %q, want %q", tc.path, got, tc.cache)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", tc.path)
		}
	}
}

// TestPageScriptsByNonce checks that the page admits only its own scripts: they carry a
// nonce, new with every answer, which the CSP names, and the CSP admits no script by
// origin, since /preview/SANDBOX/PORT/ serves a sandbox's files under the UI's origin.
func TestPageScriptsByNonce(t *testing.T) {
	seen := map[string]bool{}
	for range 3 {
		resp := get(t, "/s/repo/worker")
		page := body(t, resp)
		csp := resp.Header.Get("Content-Security-Policy")
		scripts := strings.Count(page, "<script ")
		nonces := nonceRE.FindAllStringSubmatch(page, -1)
		if scripts == 0 || len(nonces) != scripts {
			t.Fatalf("%d script tags, %d with a nonce:\n%s", scripts, len(nonces), page)
		}
		nonce := nonces[0][1]
		for _, n := range nonces {
			if n[1] != nonce {
				t.Fatalf("the page's scripts carry different nonces:\n%s", page)
			}
		}
		if seen[nonce] || len(nonce) < 22 {
			t.Fatalf("nonce %q is reused or short", nonce)
		}
		seen[nonce] = true
		directive := ""
		for _, d := range strings.Split(csp, ";") {
			if name, _, _ := strings.Cut(strings.TrimSpace(d), " "); name == "script-src" {
				directive = strings.TrimSpace(d)
			}
		}
		if directive != "script-src 'nonce-"+nonce+"'" {
			t.Fatalf("the CSP's scripts are %q, want only the nonce %q (CSP %q)", directive, nonce, csp)
		}
		if resp.Header.Get("ETag") != "" || resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("a page that differs with every answer has an ETag or is compressed: %v", resp.Header)
		}
	}
}

func TestUnknownPathsGetThePage(t *testing.T) {
	page, _, _ := index(t)
	for _, p := range []string{"/s/repo", "/s/repo/worker", "/s/repo/worker/terminal", "/s/repo/-/changes", "/s/my.repo/fix.js", "/index.html"} {
		resp := get(t, p)
		if resp.StatusCode != http.StatusOK || withoutNonce(body(t, resp)) != page {
			t.Errorf("GET %s: %d, not index.html", p, resp.StatusCode)
		}
	}
	for _, p := range []string{"/assets/main-GONE.js", "/favicon.ico", "/v1/sandboxes", "/v1"} {
		if resp := get(t, p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, req)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", w.Code)
	}
}

func TestGzipAndRevalidation(t *testing.T) {
	_, script, _ := index(t)
	plain := body(t, get(t, script))
	resp := get(t, script, "Accept-Encoding", "br, gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("no gzip for a browser that takes it: %v", resp.Header)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if string(unzipped) != plain {
		t.Fatal("the gzipped script is not the script")
	}
	if resp := get(t, script, "Accept-Encoding", "gzip;q=0"); resp.Header.Get("Content-Encoding") != "" {
		t.Error("gzip sent to a browser that refuses it")
	}
	etag := resp.Header.Get("ETag")
	if resp := get(t, script, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %s: %d, want 304", etag, resp.StatusCode)
	}
	if resp := get(t, "/", "If-None-Match", `"other"`); resp.StatusCode != http.StatusOK {
		t.Errorf("a stale ETag: %d, want 200", resp.StatusCode)
	}
}

// TestFirstLoadBudget: what a browser fetches to show the first screen (the page, its
// stylesheet, its script and the chunks that imports) stays under 300 KB as sent.
func TestFirstLoadBudget(t *testing.T) {
	const budget = 300 << 10
	page, script, style := index(t)
	sent := func(p string) int {
		resp := get(t, p, "Accept-Encoding", "gzip")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
		return len(body(t, resp))
	}
	total := sent("/") + sent(style)
	imports := regexp.MustCompile(`(?:from|import)\s*"\./([^"]+\.js)"`)
	seen := map[string]bool{}
	queue := []string{script}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		total += sent(p)
		for _, m := range imports.FindAllStringSubmatch(body(t, get(t, p)), -1) {
			queue = append(queue, "/assets/"+m[1])
		}
	}
	t.Logf("first load: %d bytes gzipped (index.html, %s, %d scripts)", total, style, len(seen))
	if total > budget {
		t.Errorf("the first load sends %d bytes, over the %d budget", total, budget)
	}
	if bytes.Contains([]byte(page), []byte("term-")) {
		t.Error("index.html loads the terminal up front")
	}
}
