// Package ghauth signs people in with GitHub: the OAuth authorization code flow with
// PKCE (a browser), the device flow (a terminal), who the token belongs to, and whether
// they are an active member of an organization. It speaks to github.com and
// api.github.com, or to the addresses Config gives (GitHub Enterprise, a test server).
package ghauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config's addresses.
const (
	DefaultWebURL = "https://github.com"
	DefaultAPIURL = "https://api.github.com"
)

// Scope is what paddock asks of a GitHub account: reading the organizations it belongs
// to, to check its membership.
const Scope = "read:org"

// Config is a GitHub OAuth app and the organization whose members may sign in.
type Config struct {
	ClientID string
	// ClientSecret is needed by the authorization code flow; the device flow does
	// without.
	ClientSecret string
	Org          string
	// WebURL and APIURL are github.com's and its API's addresses; empty means
	// DefaultWebURL and DefaultAPIURL.
	WebURL, APIURL string
	// HTTP is the client requests go through; nil means one with a 30 s timeout.
	HTTP *http.Client
}

// Client talks to GitHub for one OAuth app.
type Client struct {
	cfg Config
}

// New returns a client of cfg.
func New(cfg Config) *Client {
	if cfg.WebURL == "" {
		cfg.WebURL = DefaultWebURL
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	cfg.WebURL = strings.TrimRight(cfg.WebURL, "/")
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{cfg: cfg}
}

// Org is the organization whose active members may sign in.
func (c *Client) Org() string { return c.cfg.Org }

// CanUseWebFlow says whether the authorization code flow can run: it needs the client
// secret.
func (c *Client) CanUseWebFlow() bool { return c.cfg.ClientSecret != "" }

// NewPKCE returns a PKCE code verifier (256 random bits, base64url) and its S256
// challenge.
func NewPKCE() (verifier, challenge string) {
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	return verifier, Challenge(verifier)
}

// Challenge is the S256 code challenge of a PKCE verifier.
func Challenge(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// AuthorizeURL is where the browser goes to approve the sign-in; GitHub sends it back to
// redirectURI with the code and state.
func (c *Client) AuthorizeURL(state, challenge, redirectURI string) string {
	q := url.Values{
		"client_id":             {c.cfg.ClientID},
		"redirect_uri":          {redirectURI},
		"scope":                 {Scope},
		"state":                 {state},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
		"allow_signup":          {"false"},
	}
	return c.cfg.WebURL + "/login/oauth/authorize?" + q.Encode()
}

// OAuthError is an error GitHub's OAuth endpoints answer, as "error" and
// "error_description".
type OAuthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
	// Interval is the new polling interval in seconds that slow_down carries.
	Interval int `json:"interval"`
}

func (e *OAuthError) Error() string {
	if e.Description != "" {
		return "GitHub: " + e.Code + ": " + e.Description
	}
	return "GitHub: " + e.Code
}

// The device flow's errors that mean "go on polling" or "start again".
const (
	ErrPending   = "authorization_pending"
	ErrSlowDown  = "slow_down"
	ErrExpired   = "expired_token"
	ErrDenied    = "access_denied"
	ErrBadDevice = "incorrect_device_code"
)

// IsOAuth says whether err is GitHub's OAuth error code.
func IsOAuth(err error, code string) bool {
	var oe *OAuthError
	return errors.As(err, &oe) && oe.Code == code
}

// Exchange turns an authorization code into an access token, with the PKCE verifier of
// the code's challenge and the redirect URI the code was asked for with.
func (c *Client) Exchange(ctx context.Context, code, verifier, redirectURI string) (string, error) {
	return c.token(ctx, url.Values{
		"client_id":     {c.cfg.ClientID},
		"client_secret": {c.cfg.ClientSecret},
		"code":          {code},
		"redirect_uri":  {redirectURI},
		"code_verifier": {verifier},
	})
}

// DeviceCode is the start of a device flow: the user enters UserCode at
// VerificationURI while the device polls with DeviceCode.
type DeviceCode struct {
	DeviceCode      string `json:"device_code"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	ExpiresIn       int    `json:"expires_in"`
	Interval        int    `json:"interval"`
}

// StartDevice starts a device flow.
func (c *Client) StartDevice(ctx context.Context) (DeviceCode, error) {
	var dc DeviceCode
	err := c.postForm(ctx, "/login/device/code", url.Values{"client_id": {c.cfg.ClientID}, "scope": {Scope}}, &dc)
	if err == nil && (dc.DeviceCode == "" || dc.UserCode == "") {
		err = errors.New("GitHub answered no device code")
	}
	return dc, err
}

// PollDevice asks once whether the user approved a device flow: the access token, or an
// *OAuthError (ErrPending, ErrSlowDown with the new interval, ErrExpired, ErrDenied...).
func (c *Client) PollDevice(ctx context.Context, deviceCode string) (string, error) {
	return c.token(ctx, url.Values{
		"client_id":   {c.cfg.ClientID},
		"device_code": {deviceCode},
		"grant_type":  {"urn:ietf:params:oauth:grant-type:device_code"},
	})
}

func (c *Client) token(ctx context.Context, form url.Values) (string, error) {
	var out struct {
		OAuthError
		AccessToken string `json:"access_token"`
	}
	if err := c.postForm(ctx, "/login/oauth/access_token", form, &out); err != nil {
		return "", err
	}
	if out.Code != "" {
		oe := out.OAuthError
		return "", &oe
	}
	if out.AccessToken == "" {
		return "", errors.New("GitHub answered no access token")
	}
	return out.AccessToken, nil
}

// postForm POSTs a form to GitHub's web address and decodes its JSON answer. GitHub
// answers OAuth errors with 200 and an "error" field, which the caller reads.
func (c *Client) postForm(ctx context.Context, path string, form url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.WebURL+path, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("reach GitHub: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read GitHub's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var oe OAuthError
		if json.Unmarshal(body, &oe) == nil && oe.Code != "" {
			return &oe
		}
		return fmt.Errorf("GitHub answered %s to POST %s", resp.Status, path)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GitHub's answer to POST %s: %w", path, err)
	}
	return nil
}

// User is a GitHub account.
type User struct {
	ID    int64  `json:"id"`
	Login string `json:"login"`
	Name  string `json:"name"`
}

// ErrTokenRevoked says GitHub no longer takes the token (401): the user revoked the
// app, or the token expired.
var ErrTokenRevoked = errors.New("GitHub no longer accepts this sign-in's token (revoked or expired)")

// User returns the account an access token belongs to.
func (c *Client) User(ctx context.Context, token string) (User, error) {
	var u User
	status, err := c.get(ctx, token, "/user", &u)
	if err != nil {
		return u, err
	}
	if status != http.StatusOK || u.ID == 0 || u.Login == "" {
		return u, fmt.Errorf("GitHub answered %d to GET /user", status)
	}
	return u, nil
}

// Member says whether the token's account is an active member of the organization
// (GET /user/memberships/orgs/{org}: state "active"). A pending invitation is not
// membership; neither is a 404 (not a member) or a 403 (the organization does not let
// this app see it, which its owners can change).
func (c *Client) Member(ctx context.Context, token string) (bool, error) {
	var m struct {
		State string `json:"state"`
	}
	status, err := c.get(ctx, token, "/user/memberships/orgs/"+url.PathEscape(c.cfg.Org), &m)
	if err != nil {
		return false, err
	}
	switch status {
	case http.StatusOK:
		return m.State == "active", nil
	case http.StatusNotFound, http.StatusForbidden:
		return false, nil
	}
	return false, fmt.Errorf("GitHub answered %d to GET /user/memberships/orgs/%s", status, c.cfg.Org)
}

// get GETs an API path with the token and decodes a 200 answer; a 401 is
// ErrTokenRevoked, other statuses are returned for the caller to judge.
func (c *Client) get(ctx context.Context, token, path string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.APIURL+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return 0, fmt.Errorf("reach GitHub's API: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return resp.StatusCode, ErrTokenRevoked
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("GitHub's answer to GET %s: %w", path, err)
		}
	}
	return resp.StatusCode, nil
}
