package api

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// Port previews: a web server listening inside a sandbox, reached from a browser through
// the TCP listener (paddock web) and the sandbox guest's forward tunnel, in two forms:
//
//	http://PORT-SANDBOX.localhost:WEBPORT/   its own origin (browsers resolve *.localhost
//	                                         to the loopback); signed in by a one-time code
//	/preview/SANDBOX/PORT/                    under the UI's origin, for one host name (a
//	                                         phone, a proxy); behind the UI's own sign-in,
//	                                         its pages sandboxed by CSP so they cannot act as it
//
// The preview never passes paddock's credentials on: the Authorization header and
// paddock's cookies are taken off each request, and a response may not set paddock's
// cookies or cookies for other hosts.
const (
	previewPrefix     = "/preview/"
	previewCodeParam  = "paddock_code"
	previewCookie     = "paddock_preview"
	previewCodeTTL    = 2 * time.Minute
	previewSessionTTL = 12 * time.Hour
)

// previewHostRE matches PORT-SANDBOX.localhost[:port]; a sandbox name in a host name is
// letters, digits and dashes (names with dots or underscores use the path form).
var previewHostRE = lazyRegexp(`(?i)^([0-9]{1,5})-([a-z0-9][a-z0-9-]{0,62})\.localhost(:[0-9]+)?$`)

// hostLabelRE matches the sandbox names that can be a host name's label.
var hostLabelRE = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// PortInfo is wire.PortInfo.
type PortInfo = wire.PortInfo

// OpenPort is wire.OpenPort.
type OpenPort = wire.OpenPort

type previewGrant struct {
	sandbox string
	port    int
	expires time.Time
}

// previews keeps preview codes and sessions (in memory: a restarted daemon needs a new
// link) and one HTTP transport per sandbox port, so requests reuse tunnel connections.
type previews struct {
	s *Server

	mu       sync.Mutex
	codes    map[string]previewGrant
	sessions map[string]previewGrant // by the SHA-256 of the cookie
	// keys are the path form's preview keys, by their SHA-256; keyOf finds the key of
	// a browser session's sandbox port, so that each opening does not make another.
	keys       map[string]keyGrant
	keyOf      map[string]string
	transports map[string]*http.Transport
}

// keyGrant is what a path-form preview key was made for.
type keyGrant struct {
	previewGrant
	// session is the hash of the UI session's cookie: the key lasts while it does.
	session []byte
	// caller is who the session was, as of checked: a page's many requests do not each
	// read the session from the database. Signing out (and paddock web --stop) forgets
	// the session's keys at once; an expiry or a team member's revocation is seen at
	// the next check.
	caller  *caller
	checked time.Time
}

// keyRecheck is how long a preview key's session, once checked, is taken as valid.
const keyRecheck = 10 * time.Second

// now is the time by the sign-in's clock.
func (p *previews) now() time.Time { return p.s.web.auth.now() }

func newPreviews(s *Server) *previews {
	return &previews{s: s, codes: map[string]previewGrant{}, sessions: map[string]previewGrant{},
		keys: map[string]keyGrant{}, keyOf: map[string]string{}, transports: map[string]*http.Transport{}}
}

func (s *Server) portRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/sandboxes/{name}/ports", s.listPorts)
	mux.HandleFunc("POST /v1/sandboxes/{name}/ports/{port}/open", s.openPort)
}

func (s *Server) listPorts(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ports, err := s.svc.Ports(r.Context(), name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	base := s.webURL()
	out := make([]PortInfo, 0, len(ports))
	for _, p := range ports {
		pi := PortInfo{Port: p.Port, Address: p.Address, Process: p.Process, PID: p.PID}
		if base != nil {
			pi.URL = hostPreviewURL(base, name, p.Port)
			pi.PathURL = base.String() + pathPreview(name, p.Port)
		}
		out = append(out, pi)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) openPort(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		s.writeError(w, r, apperr.Invalid("", "%q is not a TCP port", r.PathValue("port")))
		return
	}
	if _, err := s.svc.Get(r.Context(), name); err != nil {
		s.writeError(w, r, err)
		return
	}
	base := s.webURL()
	if base == nil {
		s.writeError(w, r, apperr.Conflict("serve it first: paddock web", "previews are served by paddock web, which serves nothing now"))
		return
	}
	if r.URL.Query().Get("form") == "path" {
		writeJSON(w, http.StatusOK, OpenPort{URL: base.String() + pathPreview(name, port)})
		return
	}
	u := hostPreviewURL(base, name, port)
	if u == "" {
		s.writeError(w, r, apperr.Invalid("open "+base.String()+pathPreview(name, port)+" instead (the path form)",
			"sandbox name %q cannot be part of a host name", name))
		return
	}
	code, _ := newSecret()
	s.preview.mu.Lock()
	now := time.Now()
	for c, g := range s.preview.codes {
		if now.After(g.expires) {
			delete(s.preview.codes, c)
		}
	}
	s.preview.codes[code] = previewGrant{sandbox: name, port: port, expires: now.Add(previewCodeTTL)}
	s.preview.mu.Unlock()
	writeJSON(w, http.StatusOK, OpenPort{URL: u + "?" + previewCodeParam + "=" + code})
}

// webURL is where paddock web serves, or nil.
func (s *Server) webURL() *url.URL {
	if s.web == nil {
		return nil
	}
	st := s.web.listener.Status()
	if !st.Serving || st.URL == "" {
		return nil
	}
	u, err := url.Parse(strings.TrimSuffix(st.URL, "/"))
	if err != nil {
		return nil
	}
	return u
}

func hostPreviewURL(base *url.URL, name string, port int) string {
	if !hostLabelRE().MatchString(name) {
		return ""
	}
	webPort := base.Port()
	host := fmt.Sprintf("%d-%s.localhost", port, strings.ToLower(name))
	if webPort != "" {
		host += ":" + webPort
	}
	return base.Scheme + "://" + host + "/"
}

func pathPreview(name string, port int) string {
	return previewPrefix + url.PathEscape(name) + "/" + strconv.Itoa(port) + "/"
}

// previewHost reads PORT-SANDBOX.localhost.
func previewHost(host string) (string, int, bool) {
	m := previewHostRE().FindStringSubmatch(host)
	if m == nil {
		return "", 0, false
	}
	port, err := strconv.Atoi(m[1])
	if err != nil || port < 1 || port > 65535 {
		return "", 0, false
	}
	return strings.ToLower(m[2]), port, true
}

// serveHost serves a request for PORT-SANDBOX.localhost.
func (p *previews) serveHost(h *remote, w http.ResponseWriter, r *http.Request, host string, port int) {
	if code := r.URL.Query().Get(previewCodeParam); code != "" {
		p.redeem(h, w, r, code, host, port)
		return
	}
	grant, ok := p.grant(r, host, port)
	switch {
	case ok:
		// A page of another preview (same site: *.localhost) may not use this one's cookie.
		if r.Header.Get("Sec-Fetch-Site") == "same-site" {
			previewPage(w, http.StatusForbidden, "Refused", "A request from another site on this machine (another preview?) may not use this preview's sign-in.")
			return
		}
	case r.Header.Get("Authorization") != "":
		c, ok := h.authenticate(w, r)
		if !ok {
			return
		}
		if r, ok = h.admit(w, r, c); !ok {
			return
		}
	default:
		previewPage(w, http.StatusUnauthorized, "Sign in to this preview",
			fmt.Sprintf("Open it with <code>paddock open %s:%d</code> on the daemon's machine, or from the sandbox's ports in the web UI: the link signs this browser in to this preview.",
				html.EscapeString(host), port))
		return
	}
	name := host
	if grant.sandbox != "" {
		name = grant.sandbox
	} else if n, err := p.sandboxNamed(r.Context(), host); err == nil {
		name = n
	}
	if !p.s.visible(r.Context(), name) {
		previewPage(w, http.StatusNotFound, "No such preview", "There is no sandbox by this name.")
		return
	}
	p.proxy(w, r, name, port, "", "")
}

// sandboxNamed finds the sandbox a host name's lower-case label means (from the store
// alone: this runs for every request).
func (p *previews) sandboxNamed(ctx context.Context, label string) (string, error) {
	if sb, err := p.s.svc.Store().GetSandbox(ctx, label); err == nil {
		return sb.Name, nil
	}
	list, err := p.s.svc.Store().ListSandboxes(ctx)
	if err != nil {
		return "", err
	}
	for _, sb := range list {
		if strings.EqualFold(sb.Name, label) {
			return sb.Name, nil
		}
	}
	return "", apperr.NotFound("", "no sandbox %q", label)
}

func (p *previews) redeem(h *remote, w http.ResponseWriter, r *http.Request, code, host string, port int) {
	if !h.allowAttempt(w, r) {
		return
	}
	p.mu.Lock()
	g, ok := p.codes[code]
	delete(p.codes, code)
	p.mu.Unlock()
	if !ok || time.Now().After(g.expires) || !strings.EqualFold(g.sandbox, host) || g.port != port {
		h.failed(r, "unknown, used or expired preview code")
		previewPage(w, http.StatusUnauthorized, "This link has expired",
			"A preview link works once, for two minutes. Get a new one with <code>paddock open SANDBOX:PORT</code> or from the web UI.")
		return
	}
	secret, _ := newSecret()
	p.mu.Lock()
	now := time.Now()
	for k, s := range p.sessions {
		if now.After(s.expires) {
			delete(p.sessions, k)
		}
	}
	g.expires = now.Add(previewSessionTTL)
	p.sessions[string(hashSecret(secret))] = g
	p.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: previewCookie, Value: secret, Path: "/", HttpOnly: true, Secure: h.opts.TLS,
		SameSite: http.SameSiteLaxMode, MaxAge: int(previewSessionTTL.Seconds())})
	q := r.URL.Query()
	q.Del(previewCodeParam)
	to := *r.URL
	to.RawQuery = q.Encode()
	http.Redirect(w, r, to.RequestURI(), http.StatusSeeOther)
}

// grant is the preview session of the request's cookie, if it is one for this preview.
func (p *previews) grant(r *http.Request, host string, port int) (previewGrant, bool) {
	ck, err := r.Cookie(previewCookie)
	if err != nil {
		return previewGrant{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g, ok := p.sessions[string(hashSecret(ck.Value))]
	if !ok || time.Now().After(g.expires) || !strings.EqualFold(g.sandbox, host) || g.port != port {
		return previewGrant{}, false
	}
	return g, true
}

// previewTarget is a path-form preview's address: /preview/SANDBOX/PORT/[~pv-KEY/]REST.
type previewTarget struct {
	name string
	port int
	// key is the preview key the path carries, "" for none.
	key string
	// rest is the path inside the sandbox's server, without its leading slash.
	rest string
	// slash says PORT was followed by a slash (a path without it is redirected).
	slash bool
}

// previewKeyMark starts the path segment that carries a preview key.
const previewKeyMark = "~pv-"

// parsePreviewPath reads a path-form preview's address; ok is false for a path that is
// not one (its name or port missing or wrong).
func parsePreviewPath(p string) (t previewTarget, ok bool) {
	rest, ok := strings.CutPrefix(p, previewPrefix)
	if !ok {
		return t, false
	}
	t.name, rest, _ = strings.Cut(rest, "/")
	portStr, tail, slash := strings.Cut(rest, "/")
	port, err := strconv.Atoi(portStr)
	if t.name == "" || err != nil || port < 1 || port > 65535 || portStr != strconv.Itoa(port) {
		return t, false
	}
	t.port, t.rest, t.slash = port, tail, slash
	seg, after, _ := strings.Cut(tail, "/")
	if k, ok := strings.CutPrefix(seg, previewKeyMark); ok && previewKeyRE().MatchString(k) {
		t.key, t.rest = k, after
	}
	return t, true
}

// previewKeyRE matches a preview key: 32 random bytes, base64url.
var previewKeyRE = lazyRegexp(`^[A-Za-z0-9_-]{43}$`)

// prefix is the path the sandbox's server is served under, its key included: what its
// pages' relative addresses resolve against.
func (t previewTarget) prefix() string {
	p := pathPreview(t.name, t.port)
	if t.key != "" {
		p += previewKeyMark + t.key + "/"
	}
	return p
}

// logPath is a request's path for the daemon's log, a preview key in it left out.
func logPath(r *http.Request) string {
	if t, ok := parsePreviewPath(r.URL.Path); ok && t.key != "" {
		return pathPreview(t.name, t.port) + previewKeyMark + "…/" + t.rest
	}
	return r.URL.Path
}

// servePath serves /preview/SANDBOX/PORT/..., already authenticated as the UI. A
// browser that opens it as a page is sent on to the same address with a preview key in
// it: the page runs in an opaque origin, so the browser does not send the UI's cookie
// (SameSite=Strict) with what the page asks for, and the key, in every relative
// address, stands in for it.
func (p *previews) servePath(w http.ResponseWriter, r *http.Request) {
	t, ok := parsePreviewPath(r.URL.Path)
	if !ok {
		previewPage(w, http.StatusNotFound, "No such preview", "A preview's address is /preview/SANDBOX/PORT/.")
		return
	}
	if !p.s.visible(r.Context(), t.name) {
		previewPage(w, http.StatusNotFound, "No such preview", "There is no sandbox by this name.")
		return
	}
	if !t.slash {
		http.Redirect(w, r, pathPreview(t.name, t.port), http.StatusMovedPermanently)
		return
	}
	if c := callerOf(r.Context()); c != nil && c.session != nil && opensPage(r) {
		keyed := t
		keyed.key = p.pathKey(c.session, t.name, t.port)
		redirectPreview(w, r, t, keyed)
		return
	}
	p.servePathAs(w, r, t)
}

// redirectPreview sends a request for the path-form preview at from on to the same
// path and query beneath to's prefix (with a key or without).
func redirectPreview(w http.ResponseWriter, r *http.Request, from, to previewTarget) {
	// What follows NAME/PORT/ (and the key) in the path, as the browser escaped it.
	rest := strings.TrimPrefix(r.URL.EscapedPath(), previewPrefix)
	skip := 2
	if from.key != "" {
		skip = 3
	}
	for range skip {
		_, rest, _ = strings.Cut(rest, "/")
	}
	if r.URL.RawQuery != "" {
		rest += "?" + r.URL.RawQuery
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to.prefix()+rest, http.StatusTemporaryRedirect)
}

// opensPage says whether a browser's request opens a page (a navigation), by its Fetch
// Metadata or, without any, by what it accepts.
func opensPage(r *http.Request) bool {
	if mode := r.Header.Get("Sec-Fetch-Mode"); mode != "" {
		return mode == "navigate"
	}
	return r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// serveKeyed serves a path-form preview whose path carries a key, in place of the UI's
// sign-in: the key stands for the signed-in browser session it was made for, for this
// sandbox and port alone, while that session lasts.
func (p *previews) serveKeyed(h *remote, w http.ResponseWriter, r *http.Request, t previewTarget) {
	if !h.allowAttempt(w, r) {
		return
	}
	kh := string(hashSecret(t.key))
	g, ok := p.keyGrant(kh, t)
	c := g.caller
	if !ok {
		h.failed(r, "unknown or expired preview key")
	} else if c == nil || p.now().Sub(g.checked) >= keyRecheck {
		var err error
		c, err = h.auth.sessionByHash(r.Context(), g.session)
		if err != nil && apperr.KindOf(err) != apperr.KindUnauthorized {
			h.refuse(w, r, err)
			return
		}
		p.checkedKey(kh, c)
	}
	if c == nil {
		if ok {
			p.dropKey(kh)
		}
		if opensPage(r) {
			// The UI's cookie, if the browser has one, makes a new key.
			unkeyed := t
			unkeyed.key = ""
			redirectPreview(w, r, t, unkeyed)
			return
		}
		previewPage(w, http.StatusUnauthorized, "This preview's link has expired",
			"Open the preview again from the web UI: its address holds a key that lasts as long as the browser's sign-in.")
		return
	}
	r, ok = h.admit(w, r, c)
	if !ok {
		return
	}
	if !p.s.visible(r.Context(), t.name) {
		previewPage(w, http.StatusNotFound, "No such preview", "There is no sandbox by this name.")
		return
	}
	// The page's own fetches are cross-origin (its origin is opaque: "null"); the key, not
	// the origin, is what admits them, so their answers may be read.
	if r.Header.Get("Origin") == "null" {
		hdr := w.Header()
		hdr.Set("Access-Control-Allow-Origin", "null")
		hdr.Add("Vary", "Origin")
		if m := r.Header.Get("Access-Control-Request-Method"); r.Method == http.MethodOptions && m != "" {
			hdr.Set("Access-Control-Allow-Methods", m)
			if h := r.Header.Get("Access-Control-Request-Headers"); h != "" {
				hdr.Set("Access-Control-Allow-Headers", h)
			}
			hdr.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	p.servePathAs(w, r, t)
}

// servePathAs proxies a path-form preview's request once its caller is known.
func (p *previews) servePathAs(w http.ResponseWriter, r *http.Request, t previewTarget) {
	if r.Header.Get("Service-Worker") != "" {
		previewPage(w, http.StatusForbidden, "Not served", "A preview under the UI's address cannot be a service worker.")
		return
	}
	if r.Header.Get("Sec-Fetch-Site") == "same-origin" && !pageDest[r.Header.Get("Sec-Fetch-Dest")] {
		previewPage(w, http.StatusForbidden, "Not served", "The UI's pages may open a preview, not load its files into themselves.")
		return
	}
	w.Header().Del("X-Frame-Options") // a preview may be shown in a frame
	p.proxy(w, r, t.name, t.port, "/"+t.rest, strings.TrimSuffix(t.prefix(), "/"))
}

// pathKey is the preview key of a browser session for a sandbox's port: the one made
// before while it lasts, else a new one.
func (p *previews) pathKey(session []byte, name string, port int) string {
	owner := keyOwner(session, name, port)
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if k, ok := p.keyOf[owner]; ok {
		if g, ok := p.keys[string(hashSecret(k))]; ok && now.Before(g.expires) {
			return k
		}
	}
	for h, g := range p.keys {
		if !now.Before(g.expires) {
			p.deleteKey(h, g)
		}
	}
	k, h := newSecret()
	p.keys[string(h)] = keyGrant{previewGrant: previewGrant{sandbox: name, port: port, expires: now.Add(previewSessionTTL)}, session: session}
	p.keyOf[owner] = k
	return k
}

// keyOwner names a browser session's sandbox port in keyOf.
func keyOwner(session []byte, name string, port int) string {
	return string(session) + "\x00" + name + "\x00" + strconv.Itoa(port)
}

// deleteKey forgets the key whose hash is h; p.mu is held.
func (p *previews) deleteKey(h string, g keyGrant) {
	delete(p.keys, h)
	delete(p.keyOf, keyOwner(g.session, g.sandbox, g.port))
}

// keyGrant is what the key of hash kh, in t's path, was made for, if it is one for t's
// sandbox and port and has not expired.
func (p *previews) keyGrant(kh string, t previewTarget) (keyGrant, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g, ok := p.keys[kh]
	if !ok || !p.now().Before(g.expires) || g.sandbox != t.name || g.port != t.port {
		return keyGrant{}, false
	}
	return g, true
}

// checkedKey records who the session of the key of hash kh was just found to be (nil:
// it is over).
func (p *previews) checkedKey(kh string, c *caller) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g, ok := p.keys[kh]; ok {
		g.caller, g.checked = c, p.now()
		p.keys[kh] = g
	}
}

// forgetKeys drops the preview keys of a browser session, or every key for nil.
func (p *previews) forgetKeys(session []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for h, g := range p.keys {
		if session == nil || string(g.session) == string(session) {
			p.deleteKey(h, g)
		}
	}
}

// dropKey forgets the key of hash kh.
func (p *previews) dropKey(kh string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g, ok := p.keys[kh]; ok {
		p.deleteKey(kh, g)
	}
}

// pageDest are the Sec-Fetch-Dest values of a request that opens a page. The path form
// shares the UI's origin, so a request from the UI's own pages (Sec-Fetch-Site:
// same-origin) could load a sandbox's file into them: a stylesheet whose selectors send
// what they match to the sandbox's server, a script, an image. Such requests are
// refused unless they open a page, which then runs sandboxed (pathFormHeaders). What a
// preview's own pages ask for comes from their opaque origin, marked cross-site, and is
// not refused here. A browser that sends no Fetch Metadata is served as before.
var pageDest = map[string]bool{"document": true, "iframe": true, "frame": true}

// pathFormHeaders are set on every answer of a path-form preview, which is the final one
// (the sandbox's informational answers are dropped: finalOnly). What the sandbox answers
// runs in an opaque origin: its scripts cannot read the UI's pages, call the API with the browser's cookie, or
// register a service worker.
func pathFormHeaders(h http.Header) {
	h.Add("Content-Security-Policy", "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Del("Service-Worker-Allowed")
}

// A path-form preview shares the UI's host with every other one, and with whatever else
// the browser keeps cookies for on that host. Its cookies are its own: named with
// pathCookieMark and kept to its path when set, and only those, unmarked, reach it.
const pathCookieMark = "pv~"

// proxy forwards the request to port inside the sandbox, rewriting its path to path
// ("" keeps it), WebSockets and streamed answers included.
//
// A path-form preview (path not "") is served under prefix: the sandbox's server is told
// it in X-Forwarded-Prefix, and the cookies it sets are kept to the preview's path.
func (p *previews) proxy(w http.ResponseWriter, r *http.Request, name string, port int, path, prefix string) {
	rp := &httputil.ReverseProxy{
		Transport: finalOnly{p.transport(name, port)},
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = fmt.Sprintf("127.0.0.1:%d", port)
			if path != "" {
				pr.Out.URL.Path, pr.Out.URL.RawPath = path, ""
				pr.Out.Header.Set("X-Forwarded-Prefix", prefix)
			}
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
			pr.Out.Header.Del("Authorization")
			if path != "" {
				pathFormCookies(pr.Out)
			} else {
				stripPaddockCookies(pr.Out)
			}
			q := pr.Out.URL.Query()
			if q.Has(previewCodeParam) {
				q.Del(previewCodeParam)
				pr.Out.URL.RawQuery = q.Encode()
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			cookiePath := ""
			if path != "" {
				cookiePath = pathPreview(name, port)
				pathFormHeaders(resp.Header)
				if w.Header().Get("Access-Control-Allow-Origin") != "" {
					resp.Header.Del("Access-Control-Allow-Origin") // ours (serveKeyed), not a second one
				}
			}
			cleanSetCookies(resp.Header, cookiePath)
			resp.Header.Del("Clear-Site-Data")
			return nil
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.s.log.Debug("preview", "sandbox", name, "port", port, "err", err)
			var ae *apperr.Error
			switch {
			case errors.As(err, &ae) && ae.Kind == apperr.KindNotFound:
				previewPage(w, http.StatusNotFound, "No such sandbox", fmt.Sprintf("There is no sandbox %q. <code>paddock ls</code> lists them.", html.EscapeString(name)))
			case errors.As(err, &ae) && ae.Kind == apperr.KindConflict:
				previewPage(w, http.StatusServiceUnavailable, "The sandbox is not running",
					fmt.Sprintf("Start it with <code>paddock start %s</code>, then reload.", html.EscapeString(name)))
			default:
				previewPage(w, http.StatusBadGateway, "Nothing answers on this port",
					fmt.Sprintf("Nothing in sandbox %s answered on port %d (%s). <code>paddock ports %s</code> lists the ports that listen.",
						html.EscapeString(name), port, html.EscapeString(err.Error()), html.EscapeString(name)))
			}
		},
	}
	rp.ServeHTTP(w, r)
}

// transport is the HTTP transport to one sandbox port, kept so connections are reused.
func (p *previews) transport(name string, port int) *http.Transport {
	key := name + ":" + strconv.Itoa(port)
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.transports[key]; ok {
		return t
	}
	t := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := p.s.svc.Client(ctx, name)
			if err != nil {
				return nil, err
			}
			return c.Forward(ctx, uint32(port))
		},
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
	}
	p.transports[key] = t
	return t
}

// stripPaddockCookies removes paddock's own cookies from a request going into a sandbox.
func stripPaddockCookies(r *http.Request) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cookies {
		if isPaddockCookie(c.Name) {
			continue
		}
		r.AddCookie(c)
	}
}

func isPaddockCookie(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "paddock_") || strings.HasPrefix(n, "__host-paddock") || strings.HasPrefix(n, "__secure-paddock")
}

// pathFormCookies keeps, of a request going to a path-form preview, only the cookies
// that preview set (see pathCookieMark), under the names it gave them.
func pathFormCookies(r *http.Request) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cookies {
		if name, ok := strings.CutPrefix(c.Name, pathCookieMark); ok && name != "" {
			c.Name = name
			r.AddCookie(c)
		}
	}
}

// cleanSetCookies drops cookies a sandbox may not set: paddock's own, and any for a
// wider domain (Domain=localhost would reach the UI and every other preview). Those kept
// are written again from what was parsed, so an attribute Go's parser read differently
// from a browser is not passed on. Under a path prefix (a path-form preview), a cookie
// is marked as the preview's and its path put beneath the prefix, as the app's "/" is.
func cleanSetCookies(h http.Header, prefix string) {
	var keep []string
	for _, line := range h.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err != nil || isPaddockCookie(c.Name) || !domainFree(line) {
			continue
		}
		if prefix != "" {
			c.Name = pathCookieMark + c.Name
			c.Path = strings.TrimSuffix(prefix, "/") + "/" + strings.TrimPrefix(c.Path, "/")
		}
		if v := c.String(); v != "" {
			keep = append(keep, v)
		}
	}
	h.Del("Set-Cookie")
	for _, v := range keep {
		h.Add("Set-Cookie", v)
	}
}

// domainFree reports whether a Set-Cookie line has no Domain attribute at all, however
// spelt ("Domain =x", an empty "Domain=" after another): a browser may read one where
// Go's parser left the domain empty.
func domainFree(line string) bool {
	_, attrs, _ := strings.Cut(line, ";")
	for _, a := range strings.Split(attrs, ";") {
		name, _, _ := strings.Cut(a, "=")
		if strings.EqualFold(strings.TrimSpace(name), "domain") {
			return false
		}
	}
	return true
}

// previewPage answers a page of paddock's own, in place of the sandbox's.
func previewPage(w http.ResponseWriter, status int, title, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<!doctype html><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>%s</title><style>body{font:16px system-ui,sans-serif;margin:2em auto;max-width:36em;padding:0 1em}code{background:#eee;padding:0 .2em}</style>
<h1>%s</h1><p>%s</p><p><small>paddock preview</small></p>
`, html.EscapeString(title), html.EscapeString(title), body)
}
