package modeltest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TokenEndpoint is a faithful fake of the OAuth token endpoint where the agent CLIs
// refresh a subscription login (auth.openai.com/oauth/token for Codex,
// platform.claude.com/v1/oauth/token for Claude Code): POST /oauth/token with a JSON
// body {"grant_type": "refresh_token", "refresh_token", "client_id"}. It takes only
// the refresh token it gave last (a refresh token is spent once used), from its
// client, answers a new access token (a JWT whose exp is TTL away), refresh token and
// id_token, and refuses everything once revoked (401 refresh_token_invalidated, as
// auth.openai.com answers).
type TokenEndpoint struct {
	srv      *httptest.Server
	clientID string

	mu      sync.Mutex
	refresh string
	access  string
	grants  int
	revoked bool
	ttl     time.Duration
	claims  map[string]any
	refused int
}

// NewTokenEndpoint starts a token endpoint for clientID that takes refreshToken first;
// its access tokens last an hour unless SetTTL says otherwise, and its id_tokens carry
// idClaims.
func NewTokenEndpoint(tb testing.TB, clientID, refreshToken string, idClaims map[string]any) *TokenEndpoint {
	tb.Helper()
	e := &TokenEndpoint{clientID: clientID, refresh: refreshToken, ttl: time.Hour, claims: idClaims}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	tb.Cleanup(e.srv.Close)
	return e
}

// URL is the token endpoint's URL (ending in /oauth/token).
func (e *TokenEndpoint) URL() string { return e.srv.URL + "/oauth/token" }

// SetTTL sets how long the access tokens it gives from now on last.
func (e *TokenEndpoint) SetTTL(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ttl = d
}

// Revoke makes it refuse every refresh from now on, as a login signed out or revoked.
func (e *TokenEndpoint) Revoke() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.revoked = true
}

// Grants is how many refreshes it granted.
func (e *TokenEndpoint) Grants() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.grants
}

// Refused is how many refreshes it refused.
func (e *TokenEndpoint) Refused() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refused
}

// Access is the access token it gave last ("" before any), and RefreshToken the
// refresh token it takes now.
func (e *TokenEndpoint) Access() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.access
}

// RefreshToken is the refresh token it takes now.
func (e *TokenEndpoint) RefreshToken() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refresh
}

func (e *TokenEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var req map[string]string
	if r.Method != http.MethodPost || r.URL.Path != "/oauth/token" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") ||
		json.NewDecoder(r.Body).Decode(&req) != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	switch {
	case req["grant_type"] != "refresh_token":
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
	case req["client_id"] != e.clientID:
		oauthError(w, http.StatusUnauthorized, "invalid_client")
	case e.revoked:
		e.refused++
		oauthError(w, http.StatusUnauthorized, "refresh_token_invalidated")
	case req["refresh_token"] != e.refresh:
		e.refused++
		oauthError(w, http.StatusUnauthorized, "refresh_token_reused")
	default:
		e.grants++
		e.refresh = "rt-" + randomHex(12)
		e.access = JWT(map[string]any{"exp": time.Now().Add(e.ttl).Unix(), "jti": randomHex(12)})
		writeJSON(w, map[string]any{"access_token": e.access, "refresh_token": e.refresh, "id_token": JWT(e.claims),
			"token_type": "Bearer", "expires_in": int(e.ttl.Seconds())})
	}
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": "modeltest: " + code}})
}

// JWT is an unsigned JWT carrying claims, shaped as OpenAI's tokens are.
func JWT(claims map[string]any) string {
	enc := base64.RawURLEncoding
	payload, _ := json.Marshal(claims)
	return enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc.EncodeToString(payload) + "." + randomHex(16)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
