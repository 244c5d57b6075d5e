package creds

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ClaudeOAuthBeta is the anthropic-beta flag the Messages API wants with a
// subscription's OAuth token; Claude Code sends it itself (seen with 2.1.330), and the
// proxy adds it when a request lacks it.
const ClaudeOAuthBeta = "oauth-2025-04-20"

// CodexRefreshPath is where a sandbox's Codex refreshes its ChatGPT login
// (CODEX_REFRESH_TOKEN_URL_OVERRIDE points there): the proxy answers it itself.
const CodexRefreshPath = "/chatgpt-auth/oauth/token"

// injectLogin sets a subscription login's access token on a request to pr.
func injectLogin(h http.Header, pr *Provider, token, account string) {
	h.Set("Authorization", "Bearer "+token)
	switch pr.Login {
	case LoginClaude:
		beta := h.Values("Anthropic-Beta")
		has := false
		for _, v := range beta {
			for _, f := range strings.Split(v, ",") {
				has = has || strings.TrimSpace(f) == ClaudeOAuthBeta
			}
		}
		if !has {
			h.Set("Anthropic-Beta", strings.Join(append(beta, ClaudeOAuthBeta), ","))
		}
	case LoginCodex:
		if account != "" {
			h.Set("Chatgpt-Account-Id", account)
		}
	}
}

// accountAnswer reports whether an answer of pr at rest names ChatGPT accounts: the
// account look-ups, where Codex finds the account of its auth.json.
func accountAnswer(pr *Provider, rest string) bool {
	return pr.Login == LoginCodex && strings.HasPrefix(rest, "/backend-api/wham/")
}

// swapAccount replaces the real ChatGPT account id with the sandbox's placeholder in an
// account look-up's answer: Codex looks for the account its auth.json names (the
// placeholder) among the workspaces of its login, and refuses to start without it.
func swapAccount(resp *http.Response, account string) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	if err != nil {
		return err
	}
	data = bytes.ReplaceAll(data, []byte(account), []byte(codexPlaceholderAccount))
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
	resp.Header.Del("Content-Encoding")
	return nil
}

// loginErrorBody is an error in the provider's own shape, for a login that no longer works.
func loginErrorBody(wire, msg string) []byte {
	var body any
	switch wire {
	case WireAnthropic:
		body = map[string]any{"type": "error", "error": map[string]string{"type": "authentication_error", "message": msg}}
	default:
		body = map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": "paddock_login_refused"}}
	}
	data, _ := json.Marshal(body)
	return data
}

// refuseLogin answers a request with the provider's error shape, for a login the
// daemon cannot use.
func refuseLogin(w http.ResponseWriter, wire string, status int, msg string) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(loginErrorBody(wire, msg))
	return status
}

// loginRefusal replaces a provider's 401 answer with paddock's message, in the same shape.
func loginRefusal(resp *http.Response, wire, msg string) {
	body := loginErrorBody(wire, msg)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Del("Content-Encoding")
}

// codexRefresh answers the token refresh of a sandbox's Codex, as auth.openai.com would:
// the placeholder refresh token gets the placeholders again, once the daemon's real
// login is good (refreshed on the host when it expired or the provider refused it). A
// login that cannot be refreshed is answered 401 with the reason and what to run.
func (p *Proxy) codexRefresh(w http.ResponseWriter, r *http.Request, token string) int {
	if r.Method != http.MethodPost {
		return fail(w, http.StatusMethodNotAllowed, "paddock: POST a refresh_token grant here")
	}
	var req struct {
		GrantType    string `json:"grant_type"`
		RefreshToken string `json:"refresh_token"`
	}
	data, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if json.Unmarshal(data, &req) != nil || req.GrantType != "refresh_token" {
		return oauthFail(w, http.StatusBadRequest, "unsupported_grant_type", "paddock: this endpoint takes a JSON refresh_token grant")
	}
	if subtle.ConstantTimeCompare([]byte(req.RefreshToken), []byte(codexRefreshPlaceholder(token))) != 1 {
		return oauthFail(w, http.StatusUnauthorized, "invalid_grant", "paddock: this is not the sandbox's refresh token")
	}
	if p.logins == nil || !p.logins.Has(LoginCodex) {
		return oauthFail(w, http.StatusUnauthorized, "refresh_token_invalidated", "paddock: the daemon holds no Codex login: run `paddock login codex` on the daemon's host")
	}
	lg, err := p.logins.Token(r.Context(), LoginCodex)
	if errors.Is(err, ErrLoginRefused) {
		// Codex shows its own words for this code (the refresh token "was revoked";
		// it does not show the message); `paddock doctor` says what to run.
		return oauthFail(w, http.StatusUnauthorized, "refresh_token_invalidated", "paddock: "+err.Error())
	}
	if err != nil {
		return oauthFail(w, http.StatusBadGateway, "temporarily_unavailable", "paddock: "+err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{
		"id_token":      codexIDPlaceholder(token, lg),
		"access_token":  CodexAccessPlaceholder(token),
		"refresh_token": codexRefreshPlaceholder(token),
	})
	return http.StatusOK
}

// oauthFail answers as an OAuth token endpoint does, with the error's code and words.
func oauthFail(w http.ResponseWriter, status int, code, msg string) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}, "error_description": msg})
	return status
}

// LoginEnv is what a session of an agent using login (Agent.Login) adds to the sandbox's
// environment while the daemon holds that login: for Claude Code, the placeholder
// subscription token (and no API key, which it would prefer); for Codex, the proxy as
// its token endpoint. base is the proxy's URL inside the sandbox.
func (p *Proxy) LoginEnv(login, base, token string) []string {
	if p.logins == nil || !p.logins.Has(login) {
		return nil
	}
	switch login {
	case LoginClaude:
		return []string{"CLAUDE_CODE_OAUTH_TOKEN=" + ClaudePlaceholder(token), "ANTHROPIC_API_KEY="}
	case LoginCodex:
		return []string{"CODEX_REFRESH_TOKEN_URL_OVERRIDE=" + base + CodexRefreshPath}
	}
	return nil
}

// LoginFile is the placeholder credentials file of login for a sandbox, nil when the
// agent needs none or the daemon holds no such login: Codex's auth.json.
func (p *Proxy) LoginFile(login, token string) []byte {
	if login != LoginCodex || p.logins == nil {
		return nil
	}
	lg, err := p.logins.Load(login)
	if err != nil {
		return nil
	}
	return CodexAuthFile(token, lg, time.Now())
}
