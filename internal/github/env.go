package github

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"
)

// EnvAPIURL names the variable, in the environment `paddock serve` starts with, that
// points pull requests at another REST API root than github.com's: a GitHub Enterprise
// server's (https://HOST/api/v3), or a test's fake of GitHub. It wins over [auth.github]
// api_url in the config.
const EnvAPIURL = "PADDOCK_GITHUB_API_URL"

// EnvCAFile names the variable, in the environment `paddock serve` starts with, naming a
// PEM file of the certificates GitHub's server is trusted by besides the system's (a
// GitHub Enterprise server with a CA of its own, a test's fake): for the REST API, and
// for git's pushes, which then trust that file alone (GIT_SSL_CAINFO).
const EnvCAFile = "PADDOCK_GITHUB_CA_FILE"

// TrustFromEnv returns, when EnvCAFile is set, a client of the REST API that trusts its
// certificates besides the system's, and the environment a push trusts them by; nil and
// nil when it is not set.
func TrustFromEnv(getenv func(string) string) (*http.Client, []string, error) {
	file := getenv(EnvCAFile)
	if file == "" {
		return nil, nil, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", EnvCAFile, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("%s: %s holds no PEM certificate", EnvCAFile, file)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}, []string{"GIT_SSL_CAINFO=" + file}, nil
}
