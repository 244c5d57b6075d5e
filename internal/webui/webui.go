// Package webui is the web UI: the files esbuild builds from web/ (make web) into dist,
// embedded in the binary and served by the daemon's TCP listener at / (paddock web).
// scripts/check-web.sh checks that dist is what web/ builds.
package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

//go:embed dist
var dist embed.FS

// Assets whose names carry a hash of their content, so they may be cached for good.
const hashedDir = "assets/"

// csp is the page's Content-Security-Policy for a nonce: styles, images, connections and
// workers of this origin only (xterm.js sets styles of its own, hence 'unsafe-inline' for
// styles), and only the scripts that carry the nonce, with the modules they import.
//
// Scripts are not admitted by origin ('self'): /preview/SANDBOX/PORT/ serves, under this
// origin, whatever a server inside a sandbox answers, so one tag injected into the page
// would run a sandbox's script as the UI. The nonce is new with every answer of the page.
func csp(nonce string) string {
	return "default-src 'none'; script-src 'nonce-" + nonce + "'; worker-src 'self'; " +
		"style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
		"manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

var contentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".txt":         "text/plain; charset=utf-8",
	".json":        "application/json",
	".webmanifest": "application/manifest+json",
	".woff2":       "font/woff2",
}

// Extensions of files that a browser asks for by name: a missing one is 404, not the
// page, so a missing script does not come back as HTML.
var fileExts = map[string]bool{".js": true, ".css": true, ".map": true, ".png": true, ".ico": true,
	".svg": true, ".json": true, ".webmanifest": true, ".txt": true, ".woff2": true}

type file struct {
	name  string
	body  []byte
	ctype string
	etag  string

	gzOnce sync.Once
	gz     []byte // nil when compressing does not pay
}

// compressible says whether gzip is worth trying for the file's type.
func (f *file) compressible() bool {
	return !strings.HasPrefix(f.ctype, "image/png") && !strings.HasPrefix(f.ctype, "font/")
}

// gzipped is the file compressed once, on first request, and kept.
func (f *file) gzipped() []byte {
	f.gzOnce.Do(func() {
		if !f.compressible() || len(f.body) < 512 {
			return
		}
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(f.body)
		zw.Close()
		if b.Len() < len(f.body) {
			f.gz = b.Bytes()
		}
	})
	return f.gz
}

type handler struct {
	files map[string]*file
	// page is index.html cut before each of its script tags' attributes, where
	// the nonce goes.
	page [][]byte
}

var load = sync.OnceValue(func() *handler {
	h := &handler{files: map[string]*file{}}
	root, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded: it is there
	}
	fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			ctype = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		h.files[p] = &file{name: p, body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	h.page = bytes.SplitAfter(h.files["index.html"].body, []byte("<script "))
	return h
})

// Handler serves the UI: its files with their content types, gzip-compressed when the
// browser takes it, hashed assets cached for good and the rest revalidated; any other
// path that names no file gets index.html, so the UI's own routes (/s/NAME/SESSION) load
// it. The API (/v1/) is not its business: the daemon routes it elsewhere, and here it
// is 404.
func Handler() http.Handler { return load() }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	p := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	f, ok := h.files[p]
	if !ok || p == "index.html" {
		if p == "v1" || strings.HasPrefix(p, "v1/") || strings.HasPrefix(p, hashedDir) || (!strings.Contains(p, "/") && fileExts[path.Ext(p)]) {
			http.NotFound(w, r)
			return
		}
		h.servePage(w, r)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", f.ctype)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("ETag", f.etag)
	if strings.HasPrefix(f.name, hashedDir) {
		hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hdr.Set("Cache-Control", "no-cache")
	}
	if f.compressible() {
		hdr.Add("Vary", "Accept-Encoding")
	}
	if etagMatch(r.Header.Get("If-None-Match"), f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		if gz := f.gzipped(); gz != nil {
			body = gz
			hdr.Set("Content-Encoding", "gzip")
		}
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// servePage answers with index.html, its scripts carrying a new nonce that its CSP
// names. Every answer differs, so it has no ETag and is not compressed (it is under a
// kilobyte).
func (h *handler) servePage(w http.ResponseWriter, r *http.Request) {
	var raw [18]byte
	rand.Read(raw[:])
	nonce := base64.StdEncoding.EncodeToString(raw[:])
	var body bytes.Buffer
	for i, part := range h.page {
		body.Write(part)
		if i < len(h.page)-1 {
			body.WriteString(`nonce="` + nonce + `" `)
		}
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Content-Security-Policy", csp(nonce))
	hdr.Set("Content-Length", strconv.Itoa(body.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body.Bytes())
	}
}

// etagMatch says whether an If-None-Match header names etag (or is "*").
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// acceptsGzip says whether an Accept-Encoding header takes gzip (and not with q=0).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.TrimSpace(name) != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
