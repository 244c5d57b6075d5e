package github

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/apperr"
)

// TokenHint says where paddock takes the GitHub token from.
const TokenHint = "set GH_TOKEN (or GITHUB_TOKEN) to a token that can push to the repository and open its pull requests, in the environment `paddock serve` starts with, and restart it"

// TokenFromEnv returns the token in GH_TOKEN, else GITHUB_TOKEN (as GitHub's own CLI
// reads them), of the environment getenv reads.
func TokenFromEnv(getenv func(string) string) func() (string, error) {
	return func() (string, error) {
		for _, k := range []string{"GH_TOKEN", "GITHUB_TOKEN"} {
			if v := strings.TrimSpace(getenv(k)); v != "" {
				return v, nil
			}
		}
		return "", apperr.Unavailable(TokenHint, "no GitHub token: pull requests need one")
	}
}

// WebHost is the host (and port) GitHub's git and web pages are on for an API URL:
// github.com for api.github.com, else the API's own host (GitHub Enterprise Server
// serves its API at https://HOST/api/v3; a test server serves both).
func WebHost(apiURL string) string {
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	u, err := url.Parse(apiURL)
	if err != nil {
		return ""
	}
	if strings.EqualFold(u.Host, "api.github.com") {
		return "github.com"
	}
	return strings.ToLower(u.Host)
}

// ParseRemote returns the repository a remote's URL names on the GitHub whose API is
// apiURL. Only https URLs of that GitHub's host are taken: the token goes with the
// push, and must go nowhere else (nor over ssh or to a local path, which it cannot
// authenticate).
func ParseRemote(remoteURL, apiURL string) (Repo, error) {
	host := WebHost(apiURL)
	hint := fmt.Sprintf("set the remote to the repository's https address on %s (`git remote set-url origin https://%s/OWNER/REPO.git`), or land without --pr", host, host)
	u, err := url.Parse(remoteURL)
	if err != nil || u.Scheme == "" || (u.Scheme == "https" && u.Host == "") {
		return Repo{}, apperr.Invalid(hint, "the remote %s is not an https URL: pull requests are pushed over https with a GitHub token", redact(remoteURL))
	}
	if u.Scheme != "https" {
		return Repo{}, apperr.Invalid(hint, "the remote %s is %s, not https: pull requests are pushed over https with a GitHub token", redact(remoteURL), u.Scheme)
	}
	if !strings.EqualFold(u.Host, host) {
		return Repo{}, apperr.Invalid(hint, "the remote %s is not on %s, where pull requests are opened: paddock's GitHub token is sent to %s only", redact(remoteURL), host, host)
	}
	if u.User != nil {
		return Repo{}, apperr.Invalid(hint, "the remote %s carries credentials in its URL: paddock pushes with its own token", redact(remoteURL))
	}
	p := strings.Trim(u.Path, "/")
	p = strings.TrimSuffix(p, ".git")
	owner, name, ok := strings.Cut(p, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return Repo{}, apperr.Invalid(hint, "the remote %s names no repository (https://%s/OWNER/REPO)", redact(remoteURL), host)
	}
	return Repo{Owner: owner, Name: name}, nil
}

// redact is a URL with any password in it hidden.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// GitAuthEnv is what to add to git's environment for it to push to remoteURL with the
// token: GitHub takes "Authorization: Basic base64(x-access-token:TOKEN)" for git over
// https. The header goes in as config through GIT_CONFIG_COUNT/KEY/VALUE, scoped to the
// remote's scheme and host, so the token is never on a command line (ps shows those) nor
// written to a config file; environ is the environment git starts from, whose own
// GIT_CONFIG_* entries are kept ahead of these. No credential helper is asked: a token
// GitHub refuses fails the push rather than falling back to the user's stored passwords.
func GitAuthEnv(remoteURL, token string, environ []string) ([]string, error) {
	u, err := url.Parse(remoteURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("push with a token: %q is not an https URL", redact(remoteURL))
	}
	n := 0
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	pairs := [][2]string{
		{"http." + u.Scheme + "://" + u.Host + "/.extraHeader", "Authorization: Basic " + basic},
		{"credential.helper", ""},
	}
	var env []string
	for i, p := range pairs {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n+i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n+i, p[1]))
	}
	return append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n+len(pairs))), nil
}
