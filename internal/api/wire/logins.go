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
