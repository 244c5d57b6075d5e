package creds

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A sandbox's agent holds placeholders of the same shape as a real login's tokens, made
// from the sandbox's placeholder key, so that each sandbox's are its own and the proxy
// can tell them.

// ClaudePlaceholder is the CLAUDE_CODE_OAUTH_TOKEN a sandbox holds: shaped like a token
// of `claude setup-token` (sk-ant-oat01-...), so Claude Code takes it for a subscription
// login and sends it as a bearer token.
func ClaudePlaceholder(token string) string { return "sk-ant-oat01-" + token }

// codexPlaceholderExpiry is the expiry of the placeholder access token: far away, so
// that Codex never refreshes it by itself; the daemon refreshes the real one.
var codexPlaceholderExpiry = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// codexPlaceholderAccount stands for the ChatGPT account id in the sandbox.
const codexPlaceholderAccount = "paddock-placeholder-account"

// chatgptAuthClaim is where OpenAI's tokens keep the ChatGPT claims.
const chatgptAuthClaim = "https://api.openai.com/auth"

// CodexAccessPlaceholder is the access token of a sandbox's Codex auth.json: a JWT
// (Codex reads its exp and account claims) that is not signed by anyone.
func CodexAccessPlaceholder(token string) string {
	return unsignedJWT(map[string]any{
		"iss": "paddock", "sub": "paddock-placeholder", "exp": codexPlaceholderExpiry.Unix(),
		chatgptAuthClaim:      map[string]any{"chatgpt_account_id": codexPlaceholderAccount},
		"paddock_sandbox_key": token,
	})
}

// codexRefreshPlaceholder is the refresh token of a sandbox's Codex auth.json.
func codexRefreshPlaceholder(token string) string { return "paddock-refresh-" + token }

// codexIDPlaceholder is the id_token of a sandbox's Codex auth.json: the real one's
// email and plan (Codex shows them, and the plan decides what it offers), the account
// replaced by the placeholder, and no signature.
func codexIDPlaceholder(token string, lg Login) string {
	claims := map[string]any{"iss": "paddock", "sub": "paddock-placeholder", "exp": codexPlaceholderExpiry.Unix(), "paddock_sandbox_key": token}
	auth := map[string]any{"chatgpt_account_id": codexPlaceholderAccount}
	if real, ok := jwtClaims(lg.IDToken); ok {
		if email, ok := real["email"].(string); ok {
			claims["email"] = email
		}
		if a, ok := real[chatgptAuthClaim].(map[string]any); ok {
			if plan, ok := a["chatgpt_plan_type"].(string); ok {
				auth["chatgpt_plan_type"] = plan
			}
		}
	}
	claims[chatgptAuthClaim] = auth
	return unsignedJWT(claims)
}

// CodexAuthFile is the $CODEX_HOME/auth.json of a sandbox whose daemon holds the Codex
// login lg: the same shape as Codex's own, every token a placeholder.
func CodexAuthFile(token string, lg Login, now time.Time) []byte {
	f := map[string]any{
		"OPENAI_API_KEY": nil,
		"tokens": map[string]any{
			"id_token":      codexIDPlaceholder(token, lg),
			"access_token":  CodexAccessPlaceholder(token),
			"refresh_token": codexRefreshPlaceholder(token),
			"account_id":    codexPlaceholderAccount,
		},
		"last_refresh": now.UTC().Format(time.RFC3339Nano),
	}
	data, _ := json.MarshalIndent(f, "", "  ")
	return append(data, '\n')
}

func unsignedJWT(claims map[string]any) string {
	enc := base64.RawURLEncoding
	payload, _ := json.Marshal(claims)
	return enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc.EncodeToString(payload) + "." + enc.EncodeToString([]byte("paddock"))
}

// ParseLogin makes a login from what `paddock login NAME` was given: for claude, a
// token of `claude setup-token` (token) or the host's ~/.claude/.credentials.json
// (file); for codex, the host's ~/.codex/auth.json (file).
func ParseLogin(name, token string, file []byte) (Login, error) {
	token = strings.TrimSpace(token)
	switch {
	case name == LoginClaude && token != "":
		if strings.ContainsAny(token, " \t\r\n") {
			return Login{}, errors.New("a token has no spaces or line breaks: paste it alone, on one line")
		}
		if !strings.HasPrefix(token, "sk-ant-oat") {
			if strings.HasPrefix(token, "sk-ant-api") {
				return Login{}, errors.New("this is an API key, not a subscription token: give it with `paddock key set anthropic`")
			}
			return Login{}, errors.New("a Claude subscription token starts with sk-ant-oat (run `claude setup-token` to make one)")
		}
		return Login{AccessToken: token, Source: "token"}, nil
	case name == LoginClaude:
		return parseClaudeCredentials(file)
	case name == LoginCodex:
		if token != "" {
			return Login{}, errors.New("a Codex login is its auth.json (after `codex login`), not a token")
		}
		return parseCodexAuth(file)
	}
	return Login{}, fmt.Errorf("no login %q: paddock knows %s", name, strings.Join(LoginNames, ", "))
}

// parseClaudeCredentials reads Claude Code's ~/.claude/.credentials.json:
// {"claudeAiOauth": {"accessToken", "refreshToken", "expiresAt" (ms since the epoch),
// "scopes", "subscriptionType", ...}}.
func parseClaudeCredentials(file []byte) (Login, error) {
	var f struct {
		OAuth *struct {
			AccessToken  string   `json:"accessToken"`
			RefreshToken string   `json:"refreshToken"`
			ExpiresAt    int64    `json:"expiresAt"`
			Scopes       []string `json:"scopes"`
		} `json:"claudeAiOauth"`
	}
	if err := json.Unmarshal(file, &f); err != nil {
		return Login{}, fmt.Errorf("the credentials file of Claude Code is not JSON: %w", err)
	}
	if f.OAuth == nil || f.OAuth.AccessToken == "" {
		return Login{}, errors.New("the credentials file of Claude Code holds no subscription login (claudeAiOauth): run `claude` and /login first, or `claude setup-token`")
	}
	lg := Login{AccessToken: f.OAuth.AccessToken, RefreshToken: f.OAuth.RefreshToken, Scopes: f.OAuth.Scopes, Source: "claude-credentials"}
	if f.OAuth.ExpiresAt > 0 {
		lg.ExpiresAt = time.UnixMilli(f.OAuth.ExpiresAt).UTC()
	}
	return lg, nil
}

// parseCodexAuth reads Codex's $CODEX_HOME/auth.json: {"OPENAI_API_KEY": null,
// "tokens": {"id_token", "access_token", "refresh_token", "account_id"}, "last_refresh"}.
func parseCodexAuth(file []byte) (Login, error) {
	var f struct {
		APIKey *string `json:"OPENAI_API_KEY"`
		Tokens *struct {
			IDToken      string `json:"id_token"`
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
			AccountID    string `json:"account_id"`
		} `json:"tokens"`
		LastRefresh time.Time `json:"last_refresh"`
	}
	if err := json.Unmarshal(file, &f); err != nil {
		return Login{}, fmt.Errorf("the auth.json of Codex is not JSON: %w", err)
	}
	if f.Tokens == nil || f.Tokens.AccessToken == "" {
		if f.APIKey != nil && *f.APIKey != "" {
			return Login{}, errors.New("this Codex login is an API key, not ChatGPT: give it with `paddock key set openai`")
		}
		return Login{}, errors.New("the auth.json of Codex holds no ChatGPT login: run `codex login` first")
	}
	t := f.Tokens
	lg := Login{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, IDToken: t.IDToken, AccountID: t.AccountID,
		LastRefresh: f.LastRefresh, Source: "codex-auth"}
	if lg.AccountID == "" {
		if claims, ok := jwtClaims(t.IDToken); ok {
			if a, ok := claims[chatgptAuthClaim].(map[string]any); ok {
				lg.AccountID, _ = a["chatgpt_account_id"].(string)
			}
		}
	}
	if exp, ok := jwtExpiry(t.AccessToken); ok {
		lg.ExpiresAt = exp
	}
	return lg, nil
}
