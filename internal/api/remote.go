package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/store"
)

// errorPageData is what a page refusing a browser says.
type errorPageData struct {
	Message, Hint string
	// GitHub offers the sign-in with GitHub.
	GitHub bool
}

// Lifetimes of what signs a browser in.
const (
	// LoginCodeTTL is how long a login URL works (once).
	LoginCodeTTL = 10 * time.Minute
	// SessionTTL is how long a browser stays signed in.
	SessionTTL = 30 * 24 * time.Hour
)

// Failed authentication from one address: 10 at once, then one every 6 s.
const (
	failBurst  = 10
	failRefill = 6 * time.Second
)

// RemoteOptions configure the API as served on a TCP listener.
type RemoteOptions struct {
	// API is the handler the unix socket serves (Handler): the TCP listener serves the
	// same routes, behind authentication.
	API http.Handler
	// TLS says the listener serves HTTPS: the session cookie is then Secure.
	TLS bool
	// Loopback says the listener is on a loopback address: requests must then name a
	// loopback host, so that a site whose name an attacker points at 127.0.0.1 (DNS
	// rebinding) does not get past the origin check.
	Loopback bool
	// UI is the web UI: it gets every path but /v1/, /login and /logout, from callers
	// already authenticated (its manifest and icon from anyone: publicFiles). Nil until there is one; "/" then says the browser is
	// signed in.
	UI http.Handler
}

// caller is who a TCP request authenticated as. Requests on the unix socket have none.
type caller struct {
	// token is the token's name; empty for a browser session.
	token    string
	readOnly bool
	// session is the hash of a browser session's cookie; nil for a token.
	session []byte
	// userID is the user signed in with GitHub whose credential this is (their login
	// and whether they are an admin beside it); 0 for the daemon host's own tokens
	// and login URLs, which act as an admin.
	userID int64
	login  string
	admin  bool
}

type callerKey struct{}

// callerOf returns who a TCP request authenticated as, nil on the unix socket.
func callerOf(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

func readOnlyError(c *caller) error {
	return apperr.Forbidden("for more, create a token without --read-only: `paddock token create --name NAME`",
		"token %q is read-only: it may only read (GET), not run commands or change anything", c.token)
}

// remoteAuth checks credentials on the TCP listener and keeps the login codes. It
// outlives each listener, so that the codes and the failure counts survive a restart of
// the listener on another address.
type remoteAuth struct {
	store *store.Store
	log   *slog.Logger
	now   func() time.Time
	fails *limiter

	mu sync.Mutex
	// codes maps the SHA-256 of each unused login code to when it expires. They live
	// in memory only: a daemon restart voids them.
	codes map[string]time.Time
	// team is sign-in with GitHub, when configured (EnableTeam).
	team *team
}

func newRemoteAuth(st *store.Store, log *slog.Logger) *remoteAuth {
	return &remoteAuth{store: st, log: log, now: time.Now, fails: newLimiter(failBurst, failRefill), codes: map[string]time.Time{}}
}

// withLogin adds a new login URL to st: 128 random bits, usable once, for LoginCodeTTL.
func (a *remoteAuth) withLogin(st WebStatus) WebStatus {
	b := make([]byte, 16)
	rand.Read(b)
	code := hex.EncodeToString(b)
	now := a.now()
	exp := now.Add(LoginCodeTTL)
	a.mu.Lock()
	for k, t := range a.codes {
		if !now.Before(t) {
			delete(a.codes, k)
		}
	}
	a.codes[string(hashSecret(code))] = exp
	a.mu.Unlock()
	st.LoginURL = st.URL + "/login?code=" + code
	st.LoginExpires = &exp
	return st
}

// loginValid says whether code is an unused, unexpired login code; redeem also uses it up.
func (a *remoteAuth) loginValid(code string, redeem bool) bool {
	k := string(hashSecret(code))
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.codes[k]
	if !ok {
		return false
	}
	if !a.now().Before(exp) {
		delete(a.codes, k)
		return false
	}
	if redeem {
		delete(a.codes, k)
	}
	return true
}

// forgetLogins voids every unused login code.
func (a *remoteAuth) forgetLogins() {
	a.mu.Lock()
	a.codes = map[string]time.Time{}
	a.mu.Unlock()
}

// token returns the caller a bearer token stands for, nil for a token the daemon does
// not know (never made, or revoked). Every stored hash is compared in constant time.
func (a *remoteAuth) token(ctx context.Context, secret string) (*caller, error) {
	h := hashSecret(secret)
	tokens, err := a.store.Tokens(ctx)
	if err != nil {
		return nil, err
	}
	var match *store.Token
	for i := range tokens {
		if subtle.ConstantTimeCompare(tokens[i].Hash, h) == 1 {
			match = &tokens[i]
		}
	}
	if match == nil {
		return nil, nil
	}
	if now := a.now(); now.Sub(match.LastUsed) > time.Minute {
		if err := a.store.TouchToken(ctx, match.Name, now); err != nil {
			a.log.Warn("web: record a token's use", "token", match.Name, "err", err)
		}
	}
	c := &caller{token: match.Name, readOnly: match.ReadOnly}
	if match.UserID != 0 {
		return a.userCaller(ctx, c, match.UserID)
	}
	return c, nil
}

// session returns the caller a session cookie stands for, nil for an unknown or
// expired session.
func (a *remoteAuth) session(ctx context.Context, secret string) (*caller, error) {
	return a.sessionByHash(ctx, hashSecret(secret))
}

// sessionByHash is session for the hash of its cookie.
func (a *remoteAuth) sessionByHash(ctx context.Context, h []byte) (*caller, error) {
	exp, userID, err := a.store.WebSession(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !a.now().Before(exp) {
		return nil, a.store.DeleteWebSession(ctx, h)
	}
	c := &caller{session: h}
	if userID != 0 {
		return a.userCaller(ctx, c, userID)
	}
	return c, nil
}

// newSession makes a browser session of a user (0: the daemon's host) and returns its
// cookie's value.
func (a *remoteAuth) newSession(ctx context.Context, userID int64) (string, error) {
	secret, h := newSecret()
	now := a.now()
	if err := a.store.AddWebSession(ctx, h, userID, now, now.Add(SessionTTL)); err != nil {
		return "", err
	}
	return secret, nil
}

// Remote returns the handler of the TCP listener: opts.API behind authentication (a
// bearer token or a browser session), the origin and CSRF checks, read-only tokens'
// limits and a rate limit on failures; /login turns a login code into a session.
// docs/api.md states the rules. Call it after EnableWeb.
func (s *Server) Remote(opts RemoteOptions) http.Handler {
	return &remote{opts: opts, auth: s.web.auth, log: s.log, preview: s.preview}
}

type remote struct {
	opts    RemoteOptions
	auth    *remoteAuth
	log     *slog.Logger
	preview *previews
}

func (h *remote) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// PORT-SANDBOX.localhost is a preview, an origin of its own with its own sign-in.
	if sb, port, ok := previewHost(r.Host); ok && h.preview != nil {
		h.preview.serveHost(h, w, r, sb, port)
		return
	}
	hdr := w.Header()
	hdr.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" with
	// a form POST from this origin's own pages (the login button), which the origin
	// check below must refuse. Other sites still get no referrer.
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("X-Frame-Options", "DENY")
	if isAPI(r) {
		// Nothing the API answers is a page: a sandbox's file opened in the browser
		// runs no script in this origin.
		hdr.Set("Content-Security-Policy", "sandbox; default-src 'none'")
		hdr.Set("Cache-Control", "no-store")
	}
	if h.opts.Loopback && !wire.LoopbackHost(r.Host) {
		h.log.Warn("web: refused a request for another host name", "remote", r.RemoteAddr, "host", r.Host)
		h.refuse(w, r, apperr.Forbidden("use http://127.0.0.1 or http://localhost", "this listener is on the loopback address and serves no host named %q", r.Host))
		return
	}
	self := h.origin(r)
	origin := r.Header.Get("Origin")
	// A path-form preview's key is its credential, in place of the cookie its pages
	// (an opaque origin, "Origin: null") are not sent.
	t, keyed := parsePreviewPath(r.URL.Path)
	keyed = keyed && t.key != "" && h.preview != nil
	if origin != "" && !strings.EqualFold(origin, self) && !(keyed && origin == "null") {
		h.log.Warn("web: refused a request from another origin", "remote", r.RemoteAddr, "origin", origin, "path", logPath(r))
		h.refuse(w, r, apperr.Forbidden("", "requests from other sites are refused: Origin %q is not %s", origin, self))
		return
	}
	if keyed {
		h.preview.serveKeyed(h, w, r, t)
		return
	}
	if r.URL.Path == "/login" {
		h.login(w, r)
		return
	}
	if h.opts.UI != nil && publicFiles[r.URL.Path] && safeMethod(r.Method) {
		h.opts.UI.ServeHTTP(w, r)
		return
	}
	if t := h.auth.team; t != nil {
		switch r.URL.Path {
		case githubLoginPath:
			h.githubLogin(w, r)
			return
		case githubCallbackPath:
			h.githubCallback(w, r)
			return
		case "/v1/auth/device":
			h.deviceStart(w, r)
			return
		case "/v1/auth/device/token":
			h.deviceToken(w, r)
			return
		}
	}
	c, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	// A browser sends its cookie with whatever a page asks; what may change something
	// must show it comes from this origin's own pages.
	upgrade := r.Header.Get("Upgrade") != ""
	if c.session != nil && (!safeMethod(r.Method) || upgrade) && origin == "" && (upgrade || r.Header.Get("Sec-Fetch-Site") != "same-origin") {
		h.log.Warn("web: refused a browser request without its origin", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
		h.refuse(w, r, apperr.Forbidden("", "a browser request that changes something must come from %s (Origin or Sec-Fetch-Site: same-origin)", self))
		return
	}
	r, ok = h.admit(w, r, c)
	if !ok {
		return
	}
	switch {
	case isAPI(r):
		h.opts.API.ServeHTTP(w, r)
	case r.URL.Path == "/logout":
		h.logout(w, r, c)
	case strings.HasPrefix(r.URL.Path, previewPrefix) && h.preview != nil:
		h.preview.servePath(w, r)
	case h.opts.UI != nil:
		h.opts.UI.ServeHTTP(w, r)
	case r.URL.Path == "/":
		writePage(w, http.StatusOK, signedInPage, nil)
	default:
		h.refuse(w, r, apperr.NotFound("", "nothing at %s", r.URL.Path))
	}
}

// admit refuses what c may not do (a read-only token's writes), or returns r as c's.
func (h *remote) admit(w http.ResponseWriter, r *http.Request, c *caller) (*http.Request, bool) {
	if c.readOnly && !safeMethod(r.Method) {
		h.refuse(w, r, readOnlyError(c))
		return nil, false
	}
	ctx := context.WithValue(r.Context(), callerKey{}, c)
	if c.userID != 0 {
		ctx = sandbox.WithViewer(ctx, sandbox.Viewer{UserID: c.userID, Login: c.login, Admin: c.admin})
	}
	return r.WithContext(ctx), true
}

// publicFiles are the web UI's files served without credentials: a browser fetches the
// manifest (to add the UI to a home screen) without its cookie, and the icon the
// manifest names. They hold nothing secret.
var publicFiles = map[string]bool{"/manifest.webmanifest": true, "/icon.svg": true}

func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v1/") }

func safeMethod(m string) bool { return m == http.MethodGet || m == http.MethodHead }

// origin is this listener's own origin as the request names it.
func (h *remote) origin(r *http.Request) string {
	if h.opts.TLS {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

func (h *remote) cookieName() string {
	if h.opts.TLS {
		return "__Host-paddock_session" // the browser keeps it only if Secure, for this host, Path=/
	}
	return "paddock_session"
}

// How to get credentials, for every 401.
const credentialsHint = "create a token on the daemon's host with `paddock token create --name NAME` and send it as `Authorization: Bearer TOKEN`, or open the login URL `paddock web` prints"

var (
	errUnauthorized = apperr.Unauthorized(credentialsHint, "this API needs a token or a signed-in browser")
	errBadToken     = apperr.Unauthorized(credentialsHint, "this token is not valid: it was revoked, or this daemon never made it")
	errBadSession   = apperr.Unauthorized(credentialsHint, "this browser's session is over: it expired, signed out, or `paddock web --stop` ended it")
)

// authenticate finds who the request comes from, or answers it with 401 (or 429 when
// its address failed too often).
func (h *remote) authenticate(w http.ResponseWriter, r *http.Request) (*caller, bool) {
	var secret, kind string
	if a := r.Header.Get("Authorization"); a != "" {
		kind = "token"
		if scheme, tok, ok := strings.Cut(a, " "); ok && strings.EqualFold(scheme, "Bearer") {
			secret = strings.TrimSpace(tok)
		}
	} else if ck, err := r.Cookie(h.cookieName()); err == nil {
		kind, secret = "session cookie", ck.Value
	} else {
		h.refuse(w, r, errUnauthorized)
		return nil, false
	}
	if !h.allowAttempt(w, r) {
		return nil, false
	}
	var c *caller
	var err error
	switch {
	case secret == "":
	case kind == "token":
		c, err = h.auth.token(r.Context(), secret)
	default:
		c, err = h.auth.session(r.Context(), secret)
	}
	if err != nil {
		if apperr.KindOf(err) == apperr.KindUnauthorized && kind != "token" {
			h.clearCookie(w)
		}
		h.refuse(w, r, err)
		return nil, false
	}
	if c == nil {
		h.failed(r, "unknown or revoked "+kind)
		if kind == "token" {
			h.refuse(w, r, errBadToken)
		} else {
			h.clearCookie(w)
			h.refuse(w, r, errBadSession)
		}
		return nil, false
	}
	return c, true
}

// allowAttempt answers 429 when the request's address has no attempts left.
func (h *remote) allowAttempt(w http.ResponseWriter, r *http.Request) bool {
	wait := h.auth.fails.wait(limiterKey(r.RemoteAddr), h.auth.now())
	if wait == 0 {
		return true
	}
	secs := int(wait.Seconds()) + 1
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	h.log.Warn("web: refused an attempt: too many failures", "remote", r.RemoteAddr, "path", logPath(r))
	h.refuse(w, r, &apperr.Error{Kind: apperr.KindRateLimited,
		Message: "too many failed attempts from this address: try again in " + strconv.Itoa(secs) + " s"})
	return false
}

// failed counts and logs a failed attempt.
func (h *remote) failed(r *http.Request, reason string) {
	h.auth.fails.fail(limiterKey(r.RemoteAddr), h.auth.now())
	h.log.Warn("web: authentication failed", "remote", r.RemoteAddr, "reason", reason, "path", logPath(r))
}

// refuse answers an error: JSON for the API, a page for a browser elsewhere.
func (h *remote) refuse(w http.ResponseWriter, r *http.Request, err error) {
	b := errorBody(err)
	status := statusOf(b.Error.Kind)
	if b.Error.Kind == apperr.KindInternal {
		h.log.Error("web: request failed", "method", r.Method, "path", logPath(r), "err", err)
	}
	if isAPI(r) {
		writeJSON(w, status, b)
		return
	}
	writePage(w, status, errorPage, errorPageData{Message: b.Error.Message, Hint: b.Error.Hint,
		GitHub: h.auth.team != nil && h.auth.team.opts.GitHub.CanUseWebFlow() && status == http.StatusUnauthorized})
}

// login serves /login: GET shows a button that POSTs the code (so that a link preview
// fetching the URL neither signs itself in nor uses the code up); POST turns the code
// into a session cookie.
func (h *remote) login(w http.ResponseWriter, r *http.Request) {
	var code string
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		code = r.URL.Query().Get("code")
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		if err := r.ParseForm(); err != nil {
			h.refuse(w, r, apperr.Invalid("", "bad form: %v", err))
			return
		}
		code = r.PostForm.Get("code")
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		h.refuse(w, r, apperr.Invalid("", "%s /login: use GET or POST", r.Method))
		return
	}
	if code == "" && h.auth.team != nil && r.Method != http.MethodPost {
		writePage(w, http.StatusOK, githubLoginPage, h.auth.team.opts.GitHub.Org())
		return
	}
	if !h.allowAttempt(w, r) {
		return
	}
	if !h.auth.loginValid(code, r.Method == http.MethodPost) {
		h.failed(r, "invalid, used or expired login code")
		h.refuse(w, r, apperr.Unauthorized("run `paddock web` on the daemon's host for a new one",
			"this login link does not work: it was used already, is more than 10 minutes old, or the daemon restarted since"))
		return
	}
	if r.Method != http.MethodPost {
		writePage(w, http.StatusOK, loginPage, code)
		return
	}
	secret, err := h.auth.newSession(r.Context(), 0)
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	h.log.Info("web: a browser signed in", "remote", r.RemoteAddr)
	http.SetCookie(w, &http.Cookie{Name: h.cookieName(), Value: secret, Path: "/", MaxAge: int(SessionTTL.Seconds()),
		HttpOnly: true, Secure: h.opts.TLS, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout serves POST /logout: it ends the browser's session.
func (h *remote) logout(w http.ResponseWriter, r *http.Request, c *caller) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		h.refuse(w, r, apperr.Invalid("", "%s /logout: use POST", r.Method))
		return
	}
	if c.session != nil {
		if h.preview != nil {
			h.preview.forgetKeys(c.session)
		}
		if err := h.auth.store.DeleteWebSession(r.Context(), c.session); err != nil {
			h.refuse(w, r, err)
			return
		}
	}
	h.clearCookie(w)
	if r.Header.Get("Content-Type") == "application/x-www-form-urlencoded" {
		http.Redirect(w, r, "/", http.StatusSeeOther) // the signed-in page's button
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *remote) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: h.cookieName(), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: h.opts.TLS, SameSite: http.SameSiteStrictMode})
}
