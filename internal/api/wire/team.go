package wire

import "time"

// AuditEntry is one line of GET /v1/audit.
type AuditEntry struct {
	Time time.Time `json:"time"`
	// Who is a GitHub login, "token NAME" (a token of the daemon's host), "browser" (a
	// browser signed in with a login URL of `paddock web`) or "local" (the unix socket).
	Who     string `json:"who"`
	Action  string `json:"action"`
	Sandbox string `json:"sandbox,omitempty"`
	Status  int    `json:"status,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Remote  string `json:"remote,omitempty"`
}

// UserInfo is a user as GET /v1/users and GET /v1/me show them.
type UserInfo struct {
	Login    string     `json:"login"`
	Name     string     `json:"name,omitempty"`
	Admin    bool       `json:"admin"`
	Created  time.Time  `json:"created_at"`
	LastSeen *time.Time `json:"last_seen,omitempty"`
	// Checked is when GitHub last said they are a member; Revoked, when it said they
	// no longer are.
	Checked *time.Time  `json:"checked_at,omitempty"`
	Revoked *time.Time  `json:"revoked_at,omitempty"`
	Tokens  []TokenInfo `json:"tokens"`
}

// DeviceStart answers POST /v1/auth/device: what to show the user, and the handle to
// poll POST /v1/auth/device/token with.
type DeviceStart struct {
	Handle          string `json:"handle"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	ExpiresIn       int    `json:"expires_in"`
	Interval        int    `json:"interval"`
}

// DeviceTokenRequest is the body of POST /v1/auth/device/token.
type DeviceTokenRequest struct {
	Handle string `json:"handle"`
	// Name is what the token is for (the machine's name, say); the daemon adds the
	// user's login and a suffix of its own.
	Name string `json:"name,omitempty"`
}

// DeviceToken answers POST /v1/auth/device/token: "pending" (poll again after
// Interval seconds), "slow_down" (the same, Interval having grown) or "done", with the
// paddock token for the signed-in user, shown this once.
type DeviceToken struct {
	Status   string `json:"status"`
	Interval int    `json:"interval,omitempty"`
	Token    string `json:"token,omitempty"`
	Name     string `json:"name,omitempty"`
	Login    string `json:"login,omitempty"`
	Admin    bool   `json:"admin,omitempty"`
}

// TokenInfo is a token as GET /v1/tokens lists it: never its secret.
type TokenInfo struct {
	Name     string    `json:"name"`
	ReadOnly bool      `json:"read_only"`
	Created  time.Time `json:"created_at"`
	// LastUsed is absent until the token authenticates a request.
	LastUsed *time.Time `json:"last_used,omitempty"`
}

// TokenRequest is the body of POST /v1/tokens.
type TokenRequest struct {
	Name     string `json:"name"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// NewToken answers POST /v1/tokens: the only time the daemon shows the secret.
type NewToken struct {
	TokenInfo
	Token string `json:"token"`
}
