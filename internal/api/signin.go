package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/ghauth"
	"github.com/paddockhq/paddock/internal/store"
)

// Where a browser signs in with GitHub on the TCP listener.
const (
	githubLoginPath    = "/auth/github"
	githubCallbackPath = "/auth/github/callback"
)

func (h *remote) bindingCookie() string {
	if h.opts.TLS {
		return "__Host-paddock_oauth"
	}
	return "paddock_oauth"
}

// githubLogin starts a browser's sign-in: a state (single use, for OAuthStateTTL) bound
// to this browser by a cookie, and a PKCE verifier whose S256 challenge goes to GitHub.
func (h *remote) githubLogin(w http.ResponseWriter, r *http.Request) {
	t := h.auth.team
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		h.refuse(w, r, apperr.Invalid("", "%s %s: use GET", r.Method, r.URL.Path))
		return
	}
	if !t.opts.GitHub.CanUseWebFlow() {
		h.refuse(w, r, apperr.Unavailable("set [auth.github] client_secret_file on the server, or sign in with `paddock login`",
			"this daemon has no client secret for GitHub, which a browser's sign-in needs"))
		return
	}
	state, binding := randomHex(16), randomHex(32)
	verifier, challenge := ghauth.NewPKCE()
	redirect := h.origin(r) + githubCallbackPath
	if !t.putState(state, oauthState{verifier: verifier, binding: hashSecret(binding), redirect: redirect, expires: h.auth.now().Add(OAuthStateTTL)}, h.auth.now()) {
		h.refuse(w, r, apperr.Unavailable("try again in a few minutes", "too many sign-ins are under way"))
		return
	}
	// Lax, not Strict: the browser comes back from GitHub, another site, and must send it.
	http.SetCookie(w, &http.Cookie{Name: h.bindingCookie(), Value: binding, Path: "/", MaxAge: int(OAuthStateTTL.Seconds()),
		HttpOnly: true, Secure: h.opts.TLS, SameSite: http.SameSiteLaxMode})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, t.opts.GitHub.AuthorizeURL(state, challenge, redirect), http.StatusFound)
}

// githubCallback is where GitHub sends the browser back: the state is checked (and used
// up) before the code is exchanged, with the PKCE verifier, for a token; then GitHub is
// asked who it is and whether they are an active member of the organization.
func (h *remote) githubCallback(w http.ResponseWriter, r *http.Request) {
	t := h.auth.team
	q := r.URL.Query()
	binding := ""
	if ck, err := r.Cookie(h.bindingCookie()); err == nil {
		binding = ck.Value
	}
	http.SetCookie(w, &http.Cookie{Name: h.bindingCookie(), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: h.opts.TLS, SameSite: http.SameSiteLaxMode})
	if !h.allowAttempt(w, r) {
		return
	}
	st, ok := t.takeState(q.Get("state"), binding, h.auth.now())
	if !ok {
		h.failed(r, "unknown, used, expired or foreign sign-in state")
		h.auth.audit(r.Context(), store.AuditEntry{Who: "?", Action: "sign-in refused", Detail: "the sign-in's state was used already, expired, or belongs to another browser", Remote: r.RemoteAddr})
		h.refuse(w, r, apperr.Unauthorized("start again at "+githubLoginPath,
			"this sign-in cannot be finished: it was finished already, started more than 10 minutes ago, or started in another browser"))
		return
	}
	if e := q.Get("error"); e != "" {
		h.refuse(w, r, apperr.Unauthorized("start again at "+githubLoginPath, "GitHub did not sign you in: %s", q.Get("error_description")))
		return
	}
	token, err := t.opts.GitHub.Exchange(r.Context(), q.Get("code"), st.verifier, st.redirect)
	if err != nil {
		h.failed(r, "GitHub refused the code: "+err.Error())
		h.refuse(w, r, apperr.Unauthorized("start again at "+githubLoginPath, "GitHub refused this sign-in: %v", err))
		return
	}
	u, err := h.auth.signIn(r.Context(), token)
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	secret, err := h.auth.newSession(r.Context(), u.ID)
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	h.auth.audit(r.Context(), store.AuditEntry{Who: u.Login, UserID: u.ID, Action: "sign-in", Detail: "browser", Remote: r.RemoteAddr})
	h.log.Info("web: a user signed in with GitHub", "user", u.Login, "remote", r.RemoteAddr)
	http.SetCookie(w, &http.Cookie{Name: h.cookieName(), Value: secret, Path: "/", MaxAge: int(SessionTTL.Seconds()),
		HttpOnly: true, Secure: h.opts.TLS, SameSite: http.SameSiteStrictMode})
	// A page, not a redirect: the browser arrived from GitHub, and a strict cookie is
	// not sent on a redirect that began on another site.
	writePage(w, http.StatusOK, signedInAsPage, u.Login)
}

// DeviceStart is wire.DeviceStart.
type DeviceStart = wire.DeviceStart

// DeviceTokenRequest is wire.DeviceTokenRequest.
type DeviceTokenRequest = wire.DeviceTokenRequest

// DeviceToken is wire.DeviceToken.
type DeviceToken = wire.DeviceToken

var tokenLabel = lazyRegexp(`[^A-Za-z0-9._-]+`)

// deviceStart starts GitHub's device flow for `paddock login`. Each start counts against
// the address's failed attempts, so that no one can make the daemon call GitHub faster
// than the failure limit allows.
func (h *remote) deviceStart(w http.ResponseWriter, r *http.Request) {
	t := h.auth.team
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		h.refuse(w, r, apperr.Invalid("", "%s %s: use POST", r.Method, r.URL.Path))
		return
	}
	if !h.allowAttempt(w, r) {
		return
	}
	h.auth.fails.fail(limiterKey(r.RemoteAddr), h.auth.now())
	dc, err := t.opts.GitHub.StartDevice(r.Context())
	if err != nil {
		h.refuse(w, r, apperr.Unavailable("check [auth.github] client_id, and that the OAuth app has the device flow enabled", "GitHub's device flow: %v", err))
		return
	}
	handle := randomHex(32)
	now := h.auth.now()
	d := &deviceLogin{deviceCode: dc.DeviceCode, expires: now.Add(time.Duration(dc.ExpiresIn) * time.Second), interval: time.Duration(max(dc.Interval, 1)) * time.Second}
	t.mu.Lock()
	for k, v := range t.devices {
		if !now.Before(v.expires) {
			delete(t.devices, k)
		}
	}
	full := len(t.devices) >= maxPending
	if !full {
		t.devices[string(hashSecret(handle))] = d
	}
	t.mu.Unlock()
	if full {
		h.refuse(w, r, apperr.Unavailable("try again in a few minutes", "too many sign-ins are under way"))
		return
	}
	writeJSON(w, http.StatusOK, DeviceStart{Handle: handle, UserCode: dc.UserCode, VerificationURI: dc.VerificationURI, ExpiresIn: dc.ExpiresIn, Interval: int(d.interval / time.Second)})
}

// deviceToken polls GitHub once for a device flow this daemon started, no sooner than
// its interval (sooner is answered slow_down without asking GitHub); once approved by a
// member, it makes them a paddock token.
func (h *remote) deviceToken(w http.ResponseWriter, r *http.Request) {
	t := h.auth.team
	var req DeviceTokenRequest
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		h.refuse(w, r, apperr.Invalid("", "%s %s: use POST", r.Method, r.URL.Path))
		return
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		h.refuse(w, r, apperr.Invalid("", "bad request body: %v", err))
		return
	}
	if !h.allowAttempt(w, r) {
		return
	}
	k := string(hashSecret(req.Handle))
	now := h.auth.now()
	t.mu.Lock()
	d, ok := t.devices[k]
	var early bool
	if ok {
		early = !d.lastPoll.IsZero() && now.Sub(d.lastPoll) < d.interval
		if early {
			d.interval += 5 * time.Second
		}
		d.lastPoll = now
	}
	t.mu.Unlock()
	switch {
	case !ok:
		h.failed(r, "unknown device sign-in")
		h.refuse(w, r, apperr.Unauthorized("run `paddock login` again", "this sign-in is unknown here: it finished, expired, or the daemon restarted"))
		return
	case !now.Before(d.expires):
		t.forgetDevice(k)
		h.refuse(w, r, apperr.Unauthorized("run `paddock login` again", "the code was not entered in time: it expired"))
		return
	case early:
		writeJSON(w, http.StatusOK, DeviceToken{Status: "slow_down", Interval: int(d.interval / time.Second)})
		return
	}
	token, err := t.opts.GitHub.PollDevice(r.Context(), d.deviceCode)
	var oe *ghauth.OAuthError
	switch {
	case errors.As(err, &oe) && oe.Code == ghauth.ErrPending:
		writeJSON(w, http.StatusOK, DeviceToken{Status: "pending", Interval: int(d.interval / time.Second)})
		return
	case errors.As(err, &oe) && oe.Code == ghauth.ErrSlowDown:
		t.mu.Lock()
		if oe.Interval > 0 {
			d.interval = time.Duration(oe.Interval) * time.Second
		} else {
			d.interval += 5 * time.Second
		}
		iv := d.interval
		t.mu.Unlock()
		writeJSON(w, http.StatusOK, DeviceToken{Status: "slow_down", Interval: int(iv / time.Second)})
		return
	case errors.As(err, &oe) && oe.Code == ghauth.ErrExpired:
		t.forgetDevice(k)
		h.refuse(w, r, apperr.Unauthorized("run `paddock login` again", "the code was not entered in time: it expired"))
		return
	case errors.As(err, &oe) && oe.Code == ghauth.ErrDenied:
		t.forgetDevice(k)
		h.refuse(w, r, apperr.Unauthorized("run `paddock login` again to retry", "the sign-in was cancelled on GitHub"))
		return
	case err != nil:
		t.forgetDevice(k)
		h.refuse(w, r, apperr.Unavailable("run `paddock login` again", "GitHub's device flow: %v", err))
		return
	}
	t.forgetDevice(k)
	u, err := h.auth.signIn(r.Context(), token)
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	name, secret, err := h.auth.userToken(r.Context(), u, req.Name)
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	h.auth.audit(r.Context(), store.AuditEntry{Who: u.Login, UserID: u.ID, Action: "sign-in", Detail: "paddock login: token " + name, Remote: r.RemoteAddr})
	h.log.Info("web: a user signed in with GitHub's device flow", "user", u.Login, "token", name, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, DeviceToken{Status: "done", Token: secret, Name: name, Login: u.Login, Admin: h.auth.team.opts.IsAdmin(u.Login)})
}

func (t *team) forgetDevice(k string) {
	t.mu.Lock()
	delete(t.devices, k)
	t.mu.Unlock()
}

// userToken makes a full-access token for a user: "LOGIN-LABEL-XXXX".
func (a *remoteAuth) userToken(ctx context.Context, u store.User, label string) (string, string, error) {
	label = tokenLabel().ReplaceAllString(label, "-")
	if len(label) > 24 {
		label = label[:24]
	}
	if label == "" {
		label = "cli"
	}
	name := fmt.Sprintf("%s-%s-%s", u.Login, label, randomHex(3))
	secret, _ := newSecret()
	secret = TokenPrefix + secret
	if err := a.store.CreateToken(ctx, store.Token{Name: name, Hash: hashSecret(secret), Created: a.now(), UserID: u.ID}); err != nil {
		return "", "", err
	}
	return name, secret, nil
}
