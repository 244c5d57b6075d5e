package creds

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/atomicfile"
)

// The subscription logins the daemon can hold, by the name `paddock login NAME` takes.
const (
	// LoginClaude is Claude Code's login with a Claude subscription: a long-lived token
	// (`claude setup-token`) or the host's own login, refreshed by the daemon. The
	// anthropic provider uses it, in place of an API key, while it is there.
	LoginClaude = wire.LoginClaude
	// LoginCodex is Codex's ChatGPT login (~/.codex/auth.json), refreshed by the daemon;
	// the chatgpt provider (ChatGPT's backend, where Codex sends its model calls in that
	// mode) uses it.
	LoginCodex = wire.LoginCodex
)

// LoginNames are the logins paddock knows, sorted.
var LoginNames = []string{LoginClaude, LoginCodex}

// ErrNoLogin is returned when the daemon holds no login of that name.
var ErrNoLogin = errors.New("no login")

// ErrLoginRefused is returned when a login no longer works: its token expired with
// nothing to refresh it, or the provider refused the refresh (the login was revoked, or
// its refresh token was spent elsewhere).
var ErrLoginRefused = errors.New("login refused")

// Login is one subscription login, as the daemon keeps it (a JSON file, mode 0600,
// beside the config; never in a sandbox).
type Login struct {
	// AccessToken is what goes to the provider as the bearer token.
	AccessToken string `json:"access_token"`
	// RefreshToken gets a new access token when it expires; "" for a long-lived token.
	RefreshToken string `json:"refresh_token,omitempty"`
	// IDToken is Codex's OpenID token (a JWT whose claims say the plan and the account).
	IDToken string `json:"id_token,omitempty"`
	// AccountID is the ChatGPT account Codex's calls name (the chatgpt-account-id header).
	AccountID string `json:"account_id,omitempty"`
	// Scopes are the OAuth scopes of a Claude login, asked for again at each refresh.
	Scopes []string `json:"scopes,omitempty"`
	// ExpiresAt is when AccessToken expires; zero when not known.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// LastRefresh is when the daemon last refreshed it (zero: never).
	LastRefresh time.Time `json:"last_refresh,omitzero"`
	// Source says where it came from: "token" (pasted), "claude-credentials" (the
	// host's ~/.claude/.credentials.json), "codex-auth" (the host's ~/.codex/auth.json).
	Source string `json:"source"`
}

// LoginStatus is wire.LoginStatus (the API's wire type).
type LoginStatus = wire.LoginStatus

// loginEndpoint is where a login's tokens are refreshed, as the agent CLI itself does.
type loginEndpoint struct {
	tokenURL, clientID string
}

// Logins holds the subscription logins in a directory (NAME.json each), reads them at
// each use (so a `paddock login` takes effect at once), refreshes an access token that
// expires and writes the new tokens back.
type Logins struct {
	dir       string
	endpoints map[string]loginEndpoint
	client    *http.Client
	now       func() time.Time

	mu       sync.Mutex // one refresh at a time, and the state below
	problems map[string]problem

	cacheMu sync.Mutex
	cache   map[string]cachedLogin // the last read of each file, by its size and time
	stale   map[string]int         // the provider refused the access token with this status: refresh before next use
}

type cachedLogin struct {
	size int64
	mod  time.Time
	lg   Login
}

type problem struct {
	msg string
	at  time.Time
}

// NewLogins keeps logins in dir. The token endpoints are the agents' own (Claude Code's
// platform.claude.com, Codex's auth.openai.com), unless [providers.anthropic] or
// [providers.chatgpt] token_url says otherwise, or, for Codex, the daemon's environment
// sets CODEX_REFRESH_TOKEN_URL_OVERRIDE as Codex itself reads it. transport nil means a
// clone of http.DefaultTransport.
func NewLogins(dir string, settings map[string]Settings, getenv func(string) string, transport http.RoundTripper) *Logins {
	if transport == nil {
		transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	claude := loginEndpoint{tokenURL: "https://platform.claude.com/v1/oauth/token", clientID: "9d1c250a-e61b-44d9-88ed-5944d1962f5e"}
	codex := loginEndpoint{tokenURL: "https://auth.openai.com/oauth/token", clientID: "app_EMoamEEZ73f0CkXaXp7hrann"}
	if u := settings["anthropic"].TokenURL; u != "" {
		claude.tokenURL = u
	}
	if u := getenv("CODEX_REFRESH_TOKEN_URL_OVERRIDE"); u != "" {
		codex.tokenURL = u
	}
	if u := settings[ChatGPT].TokenURL; u != "" {
		codex.tokenURL = u
	}
	return &Logins{dir: dir, endpoints: map[string]loginEndpoint{LoginClaude: claude, LoginCodex: codex},
		client: &http.Client{Transport: transport, Timeout: 30 * time.Second}, now: time.Now,
		problems: map[string]problem{}, stale: map[string]int{}, cache: map[string]cachedLogin{}}
}

// Known reports whether name is a login paddock knows.
func Known(name string) bool { return wire.KnownLogin(name) }

func (l *Logins) path(name string) string { return filepath.Join(l.dir, name+".json") }

// Load returns the login as kept, ErrNoLogin when there is none.
func (l *Logins) Load(name string) (Login, error) {
	if !Known(name) {
		return Login{}, fmt.Errorf("no login %q: paddock knows %s", name, strings.Join(LoginNames, ", "))
	}
	fi, err := os.Stat(l.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return Login{}, fmt.Errorf("%s: run `paddock login %s` on the daemon's host: %w", name, name, ErrNoLogin)
	}
	if err != nil {
		return Login{}, err
	}
	// The file is read again only when it changed (it is replaced whole on each write).
	l.cacheMu.Lock()
	c, ok := l.cache[name]
	l.cacheMu.Unlock()
	if ok && c.size == fi.Size() && c.mod.Equal(fi.ModTime()) {
		return c.lg, nil
	}
	data, err := os.ReadFile(l.path(name))
	if err != nil {
		return Login{}, err
	}
	var lg Login
	if err := json.Unmarshal(data, &lg); err != nil || lg.AccessToken == "" {
		return Login{}, fmt.Errorf("the %s login in %s is damaged; run `paddock login %s` again", name, l.path(name), name)
	}
	l.cacheMu.Lock()
	l.cache[name] = cachedLogin{size: fi.Size(), mod: fi.ModTime(), lg: lg}
	l.cacheMu.Unlock()
	return lg, nil
}

// Has reports whether the daemon holds the login.
func (l *Logins) Has(name string) bool {
	_, err := os.Stat(l.path(name))
	return err == nil
}

// Save keeps lg as the login name (written whole, mode 0600), and forgets what went
// wrong with the one before.
func (l *Logins) Save(name string, lg Login) error {
	if !Known(name) {
		return fmt.Errorf("no login %q: paddock knows %s", name, strings.Join(LoginNames, ", "))
	}
	if lg.AccessToken == "" {
		return errors.New("a login needs an access token")
	}
	if err := l.write(name, lg); err != nil {
		return err
	}
	l.mu.Lock()
	delete(l.problems, name)
	delete(l.stale, name)
	l.mu.Unlock()
	return nil
}

func (l *Logins) write(name string, lg Login) error {
	data, err := json.MarshalIndent(lg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(l.path(name), append(data, '\n'), 0o600)
}

// Remove forgets the login (nothing to remove is no error).
func (l *Logins) Remove(name string) error {
	if !Known(name) {
		return fmt.Errorf("no login %q: paddock knows %s", name, strings.Join(LoginNames, ", "))
	}
	if err := os.Remove(l.path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	l.mu.Lock()
	delete(l.problems, name)
	delete(l.stale, name)
	l.mu.Unlock()
	return nil
}

// Status says what the daemon knows of the login.
func (l *Logins) Status(name string) LoginStatus {
	st := LoginStatus{Name: name}
	lg, err := l.Load(name)
	if err == nil {
		st.Present, st.Source, st.ExpiresAt, st.LastRefresh = true, lg.Source, lg.ExpiresAt, lg.LastRefresh
		st.Refreshable = lg.RefreshToken != ""
	} else if !errors.Is(err, ErrNoLogin) {
		st.Present, st.Problem, st.ProblemAt = true, err.Error(), l.now()
	}
	l.mu.Lock()
	p, ok := l.problems[name]
	l.mu.Unlock()
	if ok && st.Present {
		st.Problem, st.ProblemAt = p.msg, p.at
	}
	if st.Present && st.Problem == "" && !st.Refreshable && !st.ExpiresAt.IsZero() && l.now().After(st.ExpiresAt) {
		st.Problem = "its token expired and there is no refresh token"
	}
	return st
}

// Token returns the login with an access token good for the next request: one that
// expires within a minute, or that the provider refused, is refreshed first (on the
// host, with the login's refresh token) and the new tokens kept.
func (l *Logins) Token(ctx context.Context, name string) (Login, error) {
	lg, err := l.Load(name)
	if err != nil {
		return Login{}, err
	}
	l.mu.Lock()
	stale := l.stale[name] != 0
	l.mu.Unlock()
	if !stale && (lg.ExpiresAt.IsZero() || l.now().Add(time.Minute).Before(lg.ExpiresAt)) {
		return lg, nil
	}
	return l.Refresh(ctx, name)
}

// Refresh gets a new access token for the login from the provider's token endpoint,
// as the agent CLI does (grant_type refresh_token with the CLI's client id), keeps it,
// and returns it. A refusal is remembered for `paddock doctor` and returned as
// ErrLoginRefused.
func (l *Logins) Refresh(ctx context.Context, name string) (Login, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lg, err := l.Load(name)
	if err != nil {
		return Login{}, err
	}
	// Another request may have refreshed it while this one waited.
	if l.stale[name] == 0 && !lg.LastRefresh.IsZero() && l.now().Sub(lg.LastRefresh) < 10*time.Second {
		return lg, nil
	}
	if lg.RefreshToken == "" {
		msg := "its token expired and there is no refresh token to renew it"
		if status := l.stale[name]; status != 0 {
			msg = fmt.Sprintf("the provider answered %d to its token, and there is no refresh token to renew it", status)
		}
		return Login{}, l.refusedLocked(name, msg)
	}
	ep := l.endpoints[name]
	body := map[string]any{"grant_type": "refresh_token", "refresh_token": lg.RefreshToken, "client_id": ep.clientID}
	if len(lg.Scopes) > 0 {
		body["scope"] = strings.Join(lg.Scopes, " ")
	}
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.tokenURL, bytes.NewReader(raw))
	if err != nil {
		return Login{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		// Not a refusal: the provider could not be asked. The old token may still do.
		return Login{}, fmt.Errorf("refresh the %s login: %s", name, scrub(err, lg.RefreshToken))
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return Login{}, fmt.Errorf("refresh the %s login: the token endpoint answered %d", name, resp.StatusCode)
		}
		return Login{}, l.refusedLocked(name, fmt.Sprintf("the provider refused to refresh it (%d %s)", resp.StatusCode, oauthError(data)))
	}
	var got struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		IDToken      string `json:"id_token"`
		ExpiresIn    int64  `json:"expires_in"`
	}
	if err := json.Unmarshal(data, &got); err != nil || got.AccessToken == "" {
		return Login{}, fmt.Errorf("refresh the %s login: the token endpoint's answer has no access token", name)
	}
	lg.AccessToken = got.AccessToken
	if got.RefreshToken != "" {
		lg.RefreshToken = got.RefreshToken
	}
	if got.IDToken != "" {
		lg.IDToken = got.IDToken
	}
	lg.LastRefresh = l.now().UTC()
	lg.ExpiresAt = time.Time{}
	if got.ExpiresIn > 0 {
		lg.ExpiresAt = lg.LastRefresh.Add(time.Duration(got.ExpiresIn) * time.Second)
	} else if exp, ok := jwtExpiry(lg.AccessToken); ok {
		lg.ExpiresAt = exp
	}
	if err := l.write(name, lg); err != nil {
		return Login{}, fmt.Errorf("keep the refreshed %s login: %w", name, err)
	}
	delete(l.problems, name)
	delete(l.stale, name)
	return lg, nil
}

// Refused records that the provider answered 401 to the login's access token: the next
// request refreshes it first, and until then `paddock doctor` says so.
func (l *Logins) Refused(name string, status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stale[name] = status
	l.problems[name] = problem{msg: fmt.Sprintf("the provider answered %d to its token", status), at: l.now()}
}

func (l *Logins) refusedLocked(name, msg string) error {
	l.problems[name] = problem{msg: msg, at: l.now()}
	return refusedError(fmt.Sprintf("the %s login the daemon holds no longer works: %s; run `paddock login %s` on the daemon's host",
		name, msg, name))
}

// refusedError is an ErrLoginRefused whose message is whole sentences, for the agent.
type refusedError string

func (e refusedError) Error() string { return string(e) }

// Is makes errors.Is(err, ErrLoginRefused) hold.
func (e refusedError) Is(target error) bool { return target == ErrLoginRefused }

// oauthError is the error of an OAuth error answer, for a message (never a token: the
// answer is the provider's, and names the error only).
func oauthError(data []byte) string {
	var e struct {
		Error any    `json:"error"`
		Desc  string `json:"error_description"`
	}
	if json.Unmarshal(data, &e) != nil {
		return ""
	}
	var code string
	switch v := e.Error.(type) {
	case string:
		code = v
	case map[string]any:
		code, _ = v["code"].(string)
		if code == "" {
			code, _ = v["type"].(string)
		}
	}
	if len(code) > 64 {
		code = code[:64]
	}
	return code
}

// jwtClaims decodes the claims of a JWT without checking its signature: the daemon reads
// what its own login says (expiry, plan), it does not authenticate anyone with it.
func jwtClaims(token string) (map[string]any, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil, false
	}
	var claims map[string]any
	if json.Unmarshal(raw, &claims) != nil {
		return nil, false
	}
	return claims, true
}

// jwtExpiry is the exp claim of a JWT.
func jwtExpiry(token string) (time.Time, bool) {
	claims, ok := jwtClaims(token)
	if !ok {
		return time.Time{}, false
	}
	exp, ok := claims["exp"].(float64)
	if !ok || exp <= 0 {
		return time.Time{}, false
	}
	return time.Unix(int64(exp), 0).UTC(), true
}
