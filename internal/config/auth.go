package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Auth is the config's [auth] section: how people sign in to the daemon over TCP beyond
// the tokens its host makes.
type Auth struct {
	// GitHub signs in the members of one GitHub organization: [auth.github].
	GitHub GitHubAuth `toml:"github"`
}

// GitHubAuth is [auth.github]: a GitHub OAuth app whose sign-ins the daemon takes from
// the active members of Org, in a browser (the web UI's sign-in) or a terminal
// (`paddock login`, GitHub's device flow).
type GitHubAuth struct {
	// ClientID is the OAuth app's client id. Empty: no GitHub sign-in.
	ClientID string `toml:"client_id"`
	// ClientSecretFile is a file holding the app's client secret (never the secret
	// itself in this file). A browser's sign-in needs it; `paddock login` does without.
	ClientSecretFile string `toml:"client_secret_file"`
	// Org is the organization whose active members may sign in.
	Org string `toml:"org"`
	// Admins are GitHub logins that see and act on every sandbox and read the audit log.
	Admins []string `toml:"admins"`
	// Recheck is how long GitHub's word that a user is a member is trusted before it is
	// asked again, at their next request. Empty means 5m.
	Recheck Duration `toml:"recheck"`
	// WebURL and APIURL are github.com's and its API's addresses (GitHub Enterprise
	// Server: https://HOST and https://HOST/api/v3). Empty means github.com's.
	WebURL string `toml:"web_url"`
	APIURL string `toml:"api_url"`
}

// DefaultRecheck is how long a membership is trusted when [auth.github] recheck is empty.
const DefaultRecheck = 5 * time.Minute

// Enabled says whether GitHub sign-in is configured.
func (g GitHubAuth) Enabled() bool { return g.ClientID != "" }

// RecheckEvery is Recheck, or DefaultRecheck when it is empty.
func (g GitHubAuth) RecheckEvery() time.Duration {
	if g.Recheck.Duration == 0 {
		return DefaultRecheck
	}
	return g.Recheck.Duration
}

// IsAdmin says whether a GitHub login is one of Admins (GitHub's logins ignore case).
func (g GitHubAuth) IsAdmin(login string) bool {
	for _, a := range g.Admins {
		if strings.EqualFold(a, login) {
			return true
		}
	}
	return false
}

// ClientSecret reads the client secret from ClientSecretFile; "" when there is none.
func (g GitHubAuth) ClientSecret() (string, error) {
	if g.ClientSecretFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(g.ClientSecretFile)
	if err != nil {
		return "", fmt.Errorf("[auth.github] client_secret_file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("[auth.github] client_secret_file %s is empty", g.ClientSecretFile)
	}
	return s, nil
}

func (g GitHubAuth) validate() error {
	if !g.Enabled() {
		if g.Org != "" || g.ClientSecretFile != "" || len(g.Admins) > 0 {
			return fmt.Errorf("[auth.github]: client_id is needed (the OAuth app's)")
		}
		return nil
	}
	if g.Org == "" {
		return fmt.Errorf("[auth.github]: org is needed: only the active members of that organization may sign in")
	}
	if g.ClientSecretFile != "" && !filepath.IsAbs(g.ClientSecretFile) {
		return fmt.Errorf("[auth.github]: client_secret_file must be an absolute path, got %q", g.ClientSecretFile)
	}
	for _, u := range []struct{ key, v string }{{"web_url", g.WebURL}, {"api_url", g.APIURL}} {
		if u.v == "" {
			continue
		}
		p, err := url.Parse(u.v)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return fmt.Errorf("[auth.github]: %s must be an http(s) URL, got %q", u.key, u.v)
		}
	}
	return nil
}
