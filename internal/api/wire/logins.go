package wire

import (
	"encoding/json"
	"time"
)

// LoginStatus is what the daemon knows of one login, never a token.
type LoginStatus struct {
	Name string `json:"name"`
	// Present is true when the daemon holds the login.
	Present bool   `json:"present"`
	Source  string `json:"source,omitempty"`
	// ExpiresAt is when its access token expires (zero: not known); Refreshable when the
	// daemon can get a new one by itself.
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
	Refreshable bool      `json:"refreshable"`
	LastRefresh time.Time `json:"last_refresh,omitzero"`
	// Problem says why the login stopped working, "" while it works as far as the daemon
	// knows; ProblemAt is when that was seen.
	Problem   string    `json:"problem,omitempty"`
	ProblemAt time.Time `json:"problem_at,omitzero"`
}

// LoginRequest is the body of PUT /v1/logins/{name}: a token of `claude setup-token`,
// or the contents of the agent CLI's own credentials file (Claude Code's
// .credentials.json, Codex's auth.json).
type LoginRequest struct {
	Token string          `json:"token,omitempty"`
	File  json.RawMessage `json:"file,omitempty"`
}

// KeyRequest is the body of PUT /v1/providers/{name}/key.
type KeyRequest struct {
	Key string `json:"key"`
}

// The subscription logins the daemon can hold, by the name `paddock login NAME` takes.
const (
	// LoginClaude is Claude Code's login with a Claude subscription: a long-lived token
	// (`claude setup-token`) or the host's own login, refreshed by the daemon. The
	// anthropic provider uses it, in place of an API key, while it is there.
	LoginClaude = "claude"
	// LoginCodex is Codex's ChatGPT login (~/.codex/auth.json), refreshed by the daemon;
	// the chatgpt provider (ChatGPT's backend, where Codex sends its model calls in that
	// mode) uses it.
	LoginCodex = "codex"
)

// KnownLogin reports whether name is a login paddock knows.
func KnownLogin(name string) bool { return name == LoginClaude || name == LoginCodex }
