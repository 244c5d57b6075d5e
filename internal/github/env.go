package github

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// The variables of the daemon's environment that Setup reads, besides the token's.
const (
	// EnvAPIURL is the REST API's root: GitHub Enterprise Server's https://HOST/api/v3;
	// empty is api.github.com.
	EnvAPIURL = "PADDOCK_GITHUB_API_URL"
	// EnvCAFile is a PEM file of the certificate authority that signs GitHub's TLS
	// certificate (a GitHub Enterprise Server with a private one): the API's client
	// trusts it besides the system's, git's push (GIT_SSL_CAINFO) it alone.
	EnvCAFile = "PADDOCK_GITHUB_CA_FILE"
)

// Config is how the daemon reaches GitHub for pull requests.
type Config struct {
	APIURL string
	Token  func() (string, error)
	// HTTP is the client of the REST API.
	HTTP *http.Client
	// GitEnv is added to the environment of git's push.
	GitEnv []string
}

// FromEnv reads the daemon's GitHub from its environment: the token from GH_TOKEN or
// GITHUB_TOKEN when a pull request is opened (TokenFromEnv), EnvAPIURL and EnvCAFile at
// once. A CA file that cannot be read is an error, not GitHub's default.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{APIURL: strings.TrimSpace(getenv(EnvAPIURL)), Token: TokenFromEnv(getenv), HTTP: &http.Client{Timeout: 30 * time.Second}}
	if c.APIURL != "" {
		if u, err := url.Parse(c.APIURL); err != nil || u.Scheme != "https" || u.Host == "" {
			return c, fmt.Errorf("%s=%q: not an https URL", EnvAPIURL, c.APIURL)
		}
	}
	if f := getenv(EnvCAFile); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return c, fmt.Errorf("%s: %w", EnvCAFile, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return c, fmt.Errorf("%s=%s: no PEM certificate in it", EnvCAFile, f)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
		c.HTTP.Transport = tr
		c.GitEnv = []string{"GIT_SSL_CAINFO=" + f}
	}
	return c, nil
}
