// Package github opens pull requests on GitHub and follows them: a small client of the
// three REST endpoints a task's landing needs (create a pull request, get one, list a
// branch's), and what it takes to push a branch to a GitHub remote with a token that
// appears neither on git's command line nor in any config file.
//
// It is a few calls with typed answers rather than a client library: go-github resolves,
// but its whole API surface (and go-querystring) would come in for three requests, and
// what paddock needs of them is their errors turned into messages that say what to do.
//
// The endpoints, their fields and status codes are GitHub's REST API, version
// 2022-11-28: https://docs.github.com/en/rest/pulls/pulls (create a pull request: 201,
// 403, 422; get a pull request: 200, 304, 404, 406, 500, 503; list pull requests: 200,
// 304, 422) and https://docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api
// (a private repository the token cannot see answers 404, not 403).
package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/apperr"
)

// DefaultAPIURL is GitHub's REST API.
const DefaultAPIURL = "https://api.github.com"

// APIVersion is the REST API version the client speaks (the X-GitHub-Api-Version header).
const APIVersion = "2022-11-28"

// MediaType is what the client accepts: GitHub's JSON.
const MediaType = "application/vnd.github+json"

// UserAgent is the User-Agent of every request: GitHub refuses requests without one.
const UserAgent = "paddock"

// Client calls GitHub's REST API with one token.
type Client struct {
	// APIURL is the API's root: DefaultAPIURL, https://HOST/api/v3 on GitHub Enterprise
	// Server, or a test server's URL; empty is DefaultAPIURL.
	APIURL string
	Token  string
	// HTTP is the client requests go through; nil is one with a 30 s timeout.
	HTTP *http.Client
}

// Repo is a repository on GitHub.
type Repo struct {
	Owner string
	Name  string
}

func (r Repo) String() string { return r.Owner + "/" + r.Name }

// NewPull is the body of POST /repos/{owner}/{repo}/pulls.
type NewPull struct {
	Title string `json:"title"`
	// Head is the branch holding the work (in the same repository).
	Head string `json:"head"`
	// Base is the branch the work is to go into.
	Base  string `json:"base"`
	Body  string `json:"body,omitempty"`
	Draft bool   `json:"draft,omitempty"`
}

// Pull is a pull request as GitHub answers it (the fields paddock reads).
type Pull struct {
	Number  int    `json:"number"`
	URL     string `json:"url"`
	HTMLURL string `json:"html_url"`
	// State is "open" or "closed"; a merged pull request is closed with Merged set.
	State    string     `json:"state"`
	Merged   bool       `json:"merged"`
	MergedAt *time.Time `json:"merged_at"`
	Draft    bool       `json:"draft"`
	Title    string     `json:"title"`
	Body     string     `json:"body"`
	Head     Ref        `json:"head"`
	Base     Ref        `json:"base"`
}

// Ref is a pull request's head or base.
type Ref struct {
	Label string `json:"label"`
	Ref   string `json:"ref"`
	SHA   string `json:"sha"`
}

// Status is the pull request's state as paddock says it: open, closed or merged.
func (p Pull) Status() string {
	switch {
	case p.Merged || p.MergedAt != nil:
		return "merged"
	case p.State == "closed":
		return "closed"
	}
	return "open"
}

// Error is an answer of GitHub's other than success: its status and its JSON message.
type Error struct {
	// Op is the request, "POST /repos/o/r/pulls".
	Op     string
	Status int
	// Message and Errors are GitHub's: "Validation Failed" with the fields it refused.
	Message          string       `json:"message"`
	Errors           []FieldError `json:"errors"`
	DocumentationURL string       `json:"documentation_url"`
}

// FieldError is one entry of a 422's errors list.
type FieldError struct {
	Resource string `json:"resource"`
	Field    string `json:"field"`
	Code     string `json:"code"`
	// Message is set for code "custom": "A pull request already exists for o:b."
	Message string `json:"message"`
}

func (e FieldError) String() string {
	switch {
	case e.Message != "":
		return e.Message
	case e.Field != "":
		return e.Field + " " + e.Code
	}
	return e.Code
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	var details []string
	for _, fe := range e.Errors {
		details = append(details, fe.String())
	}
	if len(details) > 0 {
		msg += ": " + strings.Join(details, "; ")
	}
	return fmt.Sprintf("GitHub answered %d to %s: %s", e.Status, e.Op, msg)
}

// Exists says whether GitHub refused a pull request because one is open for its head
// already.
func (e *Error) Exists() bool {
	for _, fe := range e.Errors {
		if strings.HasPrefix(fe.Message, "A pull request already exists") {
			return true
		}
	}
	return false
}

// CreatePull opens a pull request.
func (c *Client) CreatePull(ctx context.Context, r Repo, p NewPull) (Pull, error) {
	var out Pull
	err := c.do(ctx, http.MethodPost, "/repos/"+r.path()+"/pulls", p, http.StatusCreated, &out)
	return out, err
}

// GetPull returns pull request number n.
func (c *Client) GetPull(ctx context.Context, r Repo, n int) (Pull, error) {
	var out Pull
	err := c.do(ctx, http.MethodGet, "/repos/"+r.path()+"/pulls/"+strconv.Itoa(n), nil, http.StatusOK, &out)
	return out, err
}

// PullsOf returns the pull requests (open and closed, newest first) whose head is branch
// of the repository itself: how an opening cut short after GitHub made the pull request
// finds it again.
func (c *Client) PullsOf(ctx context.Context, r Repo, branch string) ([]Pull, error) {
	q := url.Values{"head": {r.Owner + ":" + branch}, "state": {"all"}}
	var out []Pull
	err := c.do(ctx, http.MethodGet, "/repos/"+r.path()+"/pulls?"+q.Encode(), nil, http.StatusOK, &out)
	return out, err
}

func (r Repo) path() string { return url.PathEscape(r.Owner) + "/" + url.PathEscape(r.Name) }

// do sends a request with GitHub's headers and decodes a want answer into out; any
// other answer is an *Error.
func (c *Client) do(ctx context.Context, method, path string, in any, want int, out any) error {
	base := strings.TrimRight(c.APIURL, "/")
	if base == "" {
		base = DefaultAPIURL
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept", MediaType)
	req.Header.Set("X-GitHub-Api-Version", APIVersion)
	req.Header.Set("User-Agent", UserAgent)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	op := method + " " + strings.SplitN(path, "?", 2)[0]
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("reach GitHub's API at %s: %w", base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("read GitHub's answer to %s: %w", op, err)
	}
	if resp.StatusCode != want {
		e := &Error{Op: op, Status: resp.StatusCode}
		json.Unmarshal(b, e) // an answer that is not GitHub's JSON keeps the status alone
		return e
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("GitHub's answer to %s: %w", op, err)
	}
	return nil
}

// AsError returns GitHub's answer in err, if it is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Explain turns GitHub's refusal of a request about r into an error that says what to
// do: a token GitHub does not take (401), one that may not (403), a repository or pull
// request it cannot see (404: GitHub answers so for a private repository the token
// cannot reach), the fields it refused (422). Other errors come back as they are.
func Explain(err error, r Repo) error {
	e, ok := AsError(err)
	if !ok {
		return err
	}
	switch {
	case e.Status == http.StatusUnauthorized:
		return &apperr.Error{Kind: apperr.KindInvalid, Hint: TokenHint, Err: err,
			Message: fmt.Sprintf("GitHub refused paddock's token (%s): it is wrong, expired or revoked", e.Message)}
	case e.Status == http.StatusForbidden:
		return &apperr.Error{Kind: apperr.KindInvalid, Hint: "give the token write access to " + r.String() + "'s contents and pull requests; " + TokenHint, Err: err,
			Message: fmt.Sprintf("GitHub forbade this to paddock's token on %s: %s", r, e.Message)}
	case e.Status == http.StatusNotFound:
		return &apperr.Error{Kind: apperr.KindNotFound, Hint: "check the remote's OWNER/REPO, and that the token can see " + r.String() + " (GitHub answers 404 for a private repository a token cannot reach)", Err: err,
			Message: fmt.Sprintf("GitHub has no %s that paddock's token can see (%s)", r, e.Op)}
	case e.Exists():
		return &apperr.Error{Kind: apperr.KindConflict, Hint: "close that pull request on GitHub, or land the attempt into another branch", Err: err,
			Message: e.Error()}
	case e.Status == http.StatusUnprocessableEntity || e.Status == http.StatusBadRequest:
		return &apperr.Error{Kind: apperr.KindInvalid, Hint: "check the branches: the head must have commits the base has not", Err: err,
			Message: e.Error()}
	case e.Status >= 500:
		return &apperr.Error{Kind: apperr.KindUnavailable, Hint: "try again once GitHub answers (https://www.githubstatus.com)", Err: err,
			Message: e.Error()}
	}
	return err
}
