// Package githubtest is a fake of the parts of GitHub that paddock's sign-in uses: the
// OAuth authorization code flow with PKCE, the device flow, GET /user and GET
// /user/memberships/orgs/{org}. It checks each request as GitHub would (methods, paths,
// form fields, headers, the client's credentials, single-use codes, the PKCE verifier,
// the device flow's polling interval), answers what GitHub answers, and records every
// request it found wrong, for the test to fail on.
package githubtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"
)

// App is the OAuth app the fake knows.
type App struct {
	ClientID     string
	ClientSecret string
}

// Server is the fake, on a real loopback listener. Its methods may be called
// concurrently with the requests it serves.
type Server struct {
	// URL is both github.com's and api.github.com's address here.
	URL string
	App App
	Org string

	ts *httptest.Server

	mu    sync.Mutex
	users map[string]*user // by login
	// browser is who the fake's browser is signed in to GitHub as: the authorize
	// endpoint approves for them at once.
	browser string
	codes   map[string]*authCode
	devices map[string]*device // by device code
	tokens  map[string]string  // access token -> login
	// interval and expiresIn are what new device flows get; step is what slow_down adds.
	interval, step int
	expiresIn      time.Duration
	// script is what the next device flow's polls answer, in order, before approval:
	// "authorization_pending" or "slow_down".
	script  []string
	approve string // who approves the next device flow
	log     []string
	wrong   []string
}

type user struct {
	id     int64
	login  string
	name   string
	member string // "active", "pending" or "" (not a member)
}

type authCode struct {
	clientID, redirectURI, challenge, login string
	used                                    bool
	expires                                 time.Time
}

type device struct {
	userCode string
	expires  time.Time
	lastPoll time.Time
	interval int
	script   []string
	login    string // who approves it ("" : nobody yet)
	done     bool
}

// New starts the fake for an app and an organization; Close stops it.
func New(app App, org string) *Server {
	s := &Server{App: app, Org: org, users: map[string]*user{}, codes: map[string]*authCode{}, devices: map[string]*device{},
		tokens: map[string]string{}, interval: 5, step: 5, expiresIn: 15 * time.Minute}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.ts.URL
	return s
}

// Close stops the fake.
func (s *Server) Close() { s.ts.Close() }

// AddUser makes a GitHub account; member is its membership of the organization:
// "active", "pending" or "" (none).
func (s *Server) AddUser(login string, id int64, member string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[login] = &user{id: id, login: login, name: strings.ToUpper(login[:1]) + login[1:], member: member}
}

// SetMembership changes an account's membership of the organization ("" removes it).
func (s *Server) SetMembership(login, member string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[login].member = member
}

// SignInBrowser says which account the browser is signed in to GitHub with: the
// authorize page approves the app for it at once.
func (s *Server) SignInBrowser(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.browser = login
}

// SetDevice sets what the next device flow does: its interval in seconds, how much a
// slow_down adds to it, the answers its first polls get ("authorization_pending",
// "slow_down"), and who then approves it ("" : nobody, so it expires).
func (s *Server) SetDevice(interval, step int, expiresIn time.Duration, script []string, approver string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.interval, s.step, s.expiresIn, s.script, s.approve = interval, step, expiresIn, script, approver
}

// Requests returns "METHOD PATH" of every request served, in order.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// Wrong returns what was wrong with the requests served: anything a real GitHub would
// refuse or that breaks its rules (polling faster than the interval, say).
func (s *Server) Wrong() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.wrong...)
}

func (s *Server) wrongf(format string, args ...any) {
	s.wrong = append(s.wrong, fmt.Sprintf(format, args...))
}

func random() string {
	b := make([]byte, 20)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, r.Method+" "+r.URL.Path)
	switch {
	case r.URL.Path == "/login/oauth/authorize":
		s.authorize(w, r)
	case r.URL.Path == "/login/oauth/access_token":
		s.accessToken(w, r)
	case r.URL.Path == "/login/device/code":
		s.deviceCode(w, r)
	case r.URL.Path == "/user":
		s.apiUser(w, r)
	case strings.HasPrefix(r.URL.Path, "/user/memberships/orgs/"):
		s.membership(w, r, strings.TrimPrefix(r.URL.Path, "/user/memberships/orgs/"))
	default:
		s.wrongf("%s %s: no such endpoint", r.Method, r.URL.Path)
		apiError(w, http.StatusNotFound, "Not Found")
	}
}

// authorize is the page GitHub shows to approve the app; the fake's browser approves at
// once and is sent back to the redirect URI with a code and the state.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.Method != http.MethodGet {
		s.wrongf("authorize: method %s, want GET", r.Method)
	}
	if q.Get("client_id") != s.App.ClientID {
		s.wrongf("authorize: client_id %q", q.Get("client_id"))
		http.Error(w, "The client_id is not valid", http.StatusNotFound)
		return
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme == "" || redirect.Host == "" {
		s.wrongf("authorize: redirect_uri %q", q.Get("redirect_uri"))
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	for _, f := range []string{"state", "code_challenge", "scope"} {
		if q.Get(f) == "" {
			s.wrongf("authorize: no %s", f)
		}
	}
	if q.Get("code_challenge_method") != "S256" {
		s.wrongf("authorize: code_challenge_method %q, want S256", q.Get("code_challenge_method"))
	}
	if !strings.Contains(q.Get("scope"), "read:org") {
		s.wrongf("authorize: scope %q lacks read:org", q.Get("scope"))
	}
	if s.browser == "" {
		http.Error(w, "sign in to GitHub", http.StatusUnauthorized)
		return
	}
	code := random()
	s.codes[code] = &authCode{clientID: s.App.ClientID, redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		login: s.browser, expires: time.Now().Add(10 * time.Minute)}
	back := redirect.Query()
	back.Set("code", code)
	back.Set("state", q.Get("state"))
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// oauthAnswer writes what GitHub's OAuth endpoints answer: JSON when asked (Accept:
// application/json), else a form, which a client expecting JSON cannot read.
func (s *Server) oauthAnswer(w http.ResponseWriter, r *http.Request, v map[string]any) {
	if r.Header.Get("Accept") != "application/json" {
		s.wrongf("%s: Accept %q, want application/json", r.URL.Path, r.Header.Get("Accept"))
		f := url.Values{}
		for k, x := range v {
			f.Set(k, fmt.Sprint(x))
		}
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
		w.Write([]byte(f.Encode()))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func oauthErr(code, desc string) map[string]any {
	return map[string]any{"error": code, "error_description": desc}
}

// form reads a POSTed form and checks the fields are exactly those named.
func (s *Server) form(r *http.Request, fields ...string) (url.Values, bool) {
	if r.Method != http.MethodPost {
		s.wrongf("%s: method %s, want POST", r.URL.Path, r.Method)
		return nil, false
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		s.wrongf("%s: Content-Type %q", r.URL.Path, ct)
	}
	if err := r.ParseForm(); err != nil {
		s.wrongf("%s: %v", r.URL.Path, err)
		return nil, false
	}
	if len(r.URL.Query()) > 0 {
		s.wrongf("%s: fields in the URL's query (%s): they belong in the body", r.URL.Path, r.URL.RawQuery)
	}
	want := map[string]bool{}
	for _, f := range fields {
		want[f] = true
		if r.PostForm.Get(f) == "" {
			s.wrongf("%s: no %s", r.URL.Path, f)
		}
	}
	for k := range r.PostForm {
		if !want[k] {
			s.wrongf("%s: unexpected field %s", r.URL.Path, k)
		}
	}
	return r.PostForm, true
}

func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	if r.PostForm.Get("grant_type") == "urn:ietf:params:oauth:grant-type:device_code" {
		s.pollDevice(w, r)
		return
	}
	f, ok := s.form(r, "client_id", "client_secret", "code", "redirect_uri", "code_verifier")
	if !ok {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if f.Get("client_id") != s.App.ClientID || f.Get("client_secret") != s.App.ClientSecret {
		s.oauthAnswer(w, r, oauthErr("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect."))
		return
	}
	c, ok := s.codes[f.Get("code")]
	if !ok || c.used || time.Now().After(c.expires) {
		s.oauthAnswer(w, r, oauthErr("bad_verification_code", "The code passed is incorrect or expired."))
		return
	}
	c.used = true // a code is spent by its first exchange, right or wrong
	if f.Get("redirect_uri") != c.redirectURI {
		s.oauthAnswer(w, r, oauthErr("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application."))
		return
	}
	h := sha256.Sum256([]byte(f.Get("code_verifier")))
	if base64.RawURLEncoding.EncodeToString(h[:]) != c.challenge {
		s.oauthAnswer(w, r, oauthErr("bad_verification_code", "The code_verifier does not match the code_challenge."))
		return
	}
	s.oauthAnswer(w, r, s.issue(c.login))
}

func (s *Server) issue(login string) map[string]any {
	tok := "gho_" + random()
	s.tokens[tok] = login
	return map[string]any{"access_token": tok, "token_type": "bearer", "scope": "read:org"}
}

func (s *Server) deviceCode(w http.ResponseWriter, r *http.Request) {
	f, ok := s.form(r, "client_id", "scope")
	if !ok {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if f.Get("client_id") != s.App.ClientID {
		s.wrongf("device code: client_id %q", f.Get("client_id"))
		s.oauthAnswer(w, r, oauthErr("incorrect_client_credentials", "The client_id is not valid."))
		return
	}
	code := random()
	userCode := strings.ToUpper(random()[:4] + "-" + random()[:4])
	s.devices[code] = &device{userCode: userCode, expires: time.Now().Add(s.expiresIn), interval: s.interval,
		script: s.script, login: s.approve}
	s.script, s.approve = nil, ""
	s.oauthAnswer(w, r, map[string]any{"device_code": code, "user_code": userCode, "verification_uri": s.URL + "/login/device",
		"expires_in": int(s.expiresIn.Seconds()), "interval": s.interval})
}

func (s *Server) pollDevice(w http.ResponseWriter, r *http.Request) {
	f, ok := s.form(r, "client_id", "device_code", "grant_type")
	if !ok {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if f.Get("client_id") != s.App.ClientID {
		s.oauthAnswer(w, r, oauthErr("incorrect_client_credentials", "The client_id is not valid."))
		return
	}
	d, ok := s.devices[f.Get("device_code")]
	if !ok || d.done {
		s.oauthAnswer(w, r, oauthErr("incorrect_device_code", "The device_code provided is not valid."))
		return
	}
	now := time.Now()
	if now.After(d.expires) {
		s.oauthAnswer(w, r, oauthErr("expired_token", "The device_code has expired."))
		return
	}
	// GitHub wants at least the interval between polls; sooner is slow_down, and the
	// interval grows.
	if !d.lastPoll.IsZero() && now.Sub(d.lastPoll) < time.Duration(d.interval)*time.Second-100*time.Millisecond {
		s.wrongf("device flow: polled %v after the last poll, under the interval of %d s", now.Sub(d.lastPoll).Round(time.Millisecond), d.interval)
		d.lastPoll = now
		d.interval += s.step
		s.oauthAnswer(w, r, map[string]any{"error": "slow_down", "error_description": "Too many requests have been made in the same timeframe.", "interval": d.interval})
		return
	}
	d.lastPoll = now
	if len(d.script) > 0 {
		next := d.script[0]
		d.script = d.script[1:]
		if next == "slow_down" {
			d.interval += s.step
			s.oauthAnswer(w, r, map[string]any{"error": "slow_down", "error_description": "Too many requests have been made in the same timeframe.", "interval": d.interval})
			return
		}
		s.oauthAnswer(w, r, oauthErr(next, "The authorization request is still pending."))
		return
	}
	if d.login == "" {
		s.oauthAnswer(w, r, oauthErr("authorization_pending", "The authorization request is still pending."))
		return
	}
	d.done = true
	s.oauthAnswer(w, r, s.issue(d.login))
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

// caller checks an API request's method and headers and returns the token's account.
func (s *Server) caller(w http.ResponseWriter, r *http.Request) (*user, bool) {
	if r.Method != http.MethodGet {
		s.wrongf("%s: method %s, want GET", r.URL.Path, r.Method)
	}
	if a := r.Header.Get("Accept"); !strings.Contains(a, "application/vnd.github+json") && !strings.Contains(a, "application/json") {
		s.wrongf("%s: Accept %q", r.URL.Path, a)
	}
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if scheme != "Bearer" && scheme != "token" {
		s.wrongf("%s: Authorization %q, want Bearer TOKEN", r.URL.Path, r.Header.Get("Authorization"))
		apiError(w, http.StatusUnauthorized, "Requires authentication")
		return nil, false
	}
	login, ok := s.tokens[tok]
	if !ok {
		apiError(w, http.StatusUnauthorized, "Bad credentials")
		return nil, false
	}
	return s.users[login], true
}

func (s *Server) apiUser(w http.ResponseWriter, r *http.Request) {
	u, ok := s.caller(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": u.id, "login": u.login, "name": u.name, "type": "User"})
}

func (s *Server) membership(w http.ResponseWriter, r *http.Request, org string) {
	u, ok := s.caller(w, r)
	if !ok {
		return
	}
	if !strings.EqualFold(org, s.Org) || u.member == "" {
		apiError(w, http.StatusNotFound, "Not Found")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"state": u.member, "role": "member",
		"organization": map[string]any{"login": s.Org}, "user": map[string]any{"login": u.login, "id": u.id}})
}

// RevokeTokens makes every access token of an account invalid, as when its owner
// revokes the app.
func (s *Server) RevokeTokens(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, l := range s.tokens {
		if l == login {
			delete(s.tokens, tok)
		}
	}
}
