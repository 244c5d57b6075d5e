package keyring

import (
	"fmt"
	"time"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/proxy/creds"
	"github.com/paddockhq/paddock/internal/store"
)

// Logins says what the daemon knows of each subscription login (never a token).
func (s *Service) Logins() []creds.LoginStatus {
	l := s.logins()
	if l == nil {
		return nil
	}
	out := make([]creds.LoginStatus, 0, len(creds.LoginNames))
	for _, name := range creds.LoginNames {
		out = append(out, l.Status(name))
	}
	return out
}

// SetLogin keeps a subscription login for the daemon: for claude a token of `claude
// setup-token` or the contents of Claude Code's .credentials.json, for codex the
// contents of Codex's auth.json. It is checked, kept beside the config (mode 0600, where
// no sandbox sees it), and used from the next request on.
func (s *Service) SetLogin(name, token string, file []byte) (creds.LoginStatus, error) {
	l := s.logins()
	if l == nil {
		return creds.LoginStatus{}, apperr.Unavailable("", "this daemon has no credential proxy")
	}
	if !creds.Known(name) {
		return creds.LoginStatus{}, apperr.NotFound("paddock logs in to claude or codex", "no login %q", name)
	}
	lg, err := creds.ParseLogin(name, token, file)
	if err != nil {
		return creds.LoginStatus{}, apperr.Invalid("", "%v", err)
	}
	if !lg.ExpiresAt.IsZero() && lg.RefreshToken == "" && time.Now().After(lg.ExpiresAt) {
		return creds.LoginStatus{}, apperr.Invalid(fmt.Sprintf("sign in again with the %s CLI, then run `paddock login %s`", name, name), "this %s login expired at %s", name, lg.ExpiresAt.Format(time.RFC3339))
	}
	if err := l.Save(name, lg); err != nil {
		return creds.LoginStatus{}, err
	}
	return l.Status(name), nil
}

// RemoveLogin forgets a subscription login; the provider's API key, if any, is used again.
func (s *Service) RemoveLogin(name string) (creds.LoginStatus, error) {
	l := s.logins()
	if l == nil {
		return creds.LoginStatus{}, apperr.Unavailable("", "this daemon has no credential proxy")
	}
	if !creds.Known(name) {
		return creds.LoginStatus{}, apperr.NotFound("paddock logs in to claude or codex", "no login %q", name)
	}
	if err := l.Remove(name); err != nil {
		return creds.LoginStatus{}, err
	}
	return l.Status(name), nil
}

// LoginEnv is what a session of an agent that can use login adds to sandbox sb's
// environment while the daemon holds that login (placeholders only).
func (s *Service) LoginEnv(sb store.Sandbox, login string) []string {
	if s.creds == nil || login == "" {
		return nil
	}
	return s.creds.LoginEnv(login, fmt.Sprintf("http://127.0.0.1:%d", sb.CredsPort), sb.CredsToken)
}

// LoginFile is the placeholder credentials file a session of an agent using login
// writes in sandbox sb, nil when none.
func (s *Service) LoginFile(sb store.Sandbox, login string) []byte {
	if s.creds == nil || login == "" {
		return nil
	}
	return s.creds.LoginFile(login, sb.CredsToken)
}

// ProxyCA is the certificate of the CA that signs the credential proxy's certificate
// (PEM), for agents that reach it over HTTPS; nil when it speaks plain HTTP only.
func (s *Service) ProxyCA() []byte {
	if s.creds == nil || s.creds.TLS() == nil {
		return nil
	}
	return s.creds.TLS().PEM
}

// hasLogin reports whether the daemon holds the login.
func (s *Service) hasLogin(login string) bool {
	l := s.logins()
	return login != "" && l != nil && l.Has(login)
}

func (s *Service) logins() *creds.Logins {
	if s.creds == nil {
		return nil
	}
	return s.creds.Logins()
}
