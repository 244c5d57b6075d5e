// Package wire is the API's client side that every command needs: the connection to a
// daemon (its unix socket, or HTTPS with a token), error bodies, the version probe and
// exec. It imports little beyond the standard library, so the lean CLI front
// (cmd/paddock) links it without the daemon's packages; package api builds the rest of
// the client on it.
package wire

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/apperr"
)

// Client talks to a daemon: over its unix socket, or over HTTPS with a token.
type Client struct {
	// HTTP carries every request (and WebSocket's upgrade).
	HTTP *http.Client
	// Base is what request paths are appended to, WS the same for WebSocket routes.
	Base, WS string
}

// NewClient returns a client for the daemon listening on socket.
func NewClient(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns: 4,
	}
	return &Client{HTTP: &http.Client{Transport: tr}, Base: "http://paddock", WS: "ws://paddock"}
}

// NewRemoteClient returns a client for the daemon serving the API at rawURL (https, or
// http on a loopback address), authenticating with token (`paddock token create`), and
// trusting caPEM's certificates besides the system's when it is not empty.
func NewRemoteClient(rawURL, token string, caPEM []byte) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(rawURL, "/"))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("%q is not a daemon's address: use https://HOST:PORT", rawURL)
	}
	if u.Scheme == "http" && !LoopbackHost(u.Host) {
		return nil, fmt.Errorf("%s would send the token in the clear: use https:// (paddock web --tls-cert, --tls-key on the server)", rawURL)
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("the CA file holds no PEM certificate")
		}
		tlsConf.RootCAs = pool
	}
	tr := &http.Transport{TLSClientConfig: tlsConf, MaxIdleConns: 4, ForceAttemptHTTP2: true,
		Proxy: http.ProxyFromEnvironment, TLSHandshakeTimeout: 10 * time.Second}
	ws := "wss://" + u.Host
	if u.Scheme == "http" {
		ws = "ws://" + u.Host
	}
	return &Client{HTTP: &http.Client{Transport: tokenAuth{token: token, next: tr}}, Base: u.Scheme + "://" + u.Host, WS: ws}, nil
}

// LoopbackHost says whether a host (or HOST:PORT, as in a Host header) names this
// machine's loopback.
func LoopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokenAuth adds the token to every request.
type tokenAuth struct {
	token string
	next  http.RoundTripper
}

func (b tokenAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token == "" {
		return b.next.RoundTrip(r) // signing in: no token yet
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// SandboxPath is the API path of a sandbox, with rest appended.
func SandboxPath(name string, rest ...string) string {
	return "/v1/sandboxes/" + url.PathEscape(name) + strings.Join(rest, "")
}

// Do sends a request and decodes a JSON answer into out (when not nil). An error
// response becomes an *apperr.Error with the daemon's kind, message and hint; a
// connection that could not be made, a *DialError.
func (c *Client) Do(ctx context.Context, method, path string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return &DialError{err}
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return DecodeError(resp)
	}
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error struct {
		Kind    apperr.Kind `json:"kind"`
		Message string      `json:"message"`
		Hint    string      `json:"hint,omitempty"`
	} `json:"error"`
}

// Err is the error an error body carries.
func (b ErrorBody) Err() error {
	return &apperr.Error{Kind: b.Error.Kind, Message: b.Error.Message, Hint: b.Error.Hint}
}

// DecodeError reads an error response (status 400 or more) as the error it carries.
func DecodeError(resp *http.Response) error {
	var b ErrorBody
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(data, &b) != nil || b.Error.Message == "" {
		return fmt.Errorf("daemon answered %s: %s", resp.Status, strings.TrimSpace(string(data)))
	}
	return b.Err()
}

// Version is the daemon's answer to GET /v1/version.
type Version struct {
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	PID      int    `json:"pid"`
	// Guest is the sha256 of the guest binary the daemon injects.
	Guest string `json:"guest_sha256"` // and agent_sha256, its former name (version.go)
}

// Version asks the daemon who it is; it fails fast when no daemon listens.
func (c *Client) Version(ctx context.Context) (Version, error) {
	var v Version
	err := c.Do(ctx, http.MethodGet, "/v1/version", nil, &v)
	return v, err
}
