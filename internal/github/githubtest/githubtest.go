// Package githubtest is a fake of the parts of GitHub that a task's pull request uses:
// the REST API's pull requests (create, get, list by head) and git over smart HTTP, on
// one TLS server. Each repository is a real bare repository served by `git
// http-backend`, so a push is a real push, and the REST answers read its branches.
//
// It checks every request as GitHub would and answers as GitHub does, with GitHub's
// fields and status codes (https://docs.github.com/en/rest/pulls/pulls, API version
// 2022-11-28): the token (401 "Requires authentication" without one, "Bad credentials"
// with another), a User-Agent (403 without), the API version header (400 for one it
// does not know), the JSON body (400 "Problems parsing JSON"; 422 for a field missing, a
// head or base that is not a branch of the repository, a head with no commits the base
// lacks, an open pull request for the same head and base), and a push needs the token
// in HTTP Basic authentication (401 with a Basic challenge otherwise). What a real
// GitHub would take but a careful client should not send (no Accept of GitHub's media
// type, no API version) is answered and recorded in Wrong, for the test to fail on.
package githubtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the REST API version the fake serves.
const Version = "2022-11-28"

// Server is the fake. Its methods may be called concurrently with the requests it
// serves.
type Server struct {
	// URL is the REST API's root (as https://api.github.com) and git's (as
	// https://github.com): https://127.0.0.1:PORT.
	URL string
	// Token is the one token the fake takes.
	Token string
	// CAFile is the server's certificate in PEM, for git's GIT_SSL_CAINFO (which wins over
	// http.sslCAInfo).
	CAFile string

	ts   *httptest.Server
	root string // the bare repositories, as OWNER/NAME.git
	git  string // git's path
	home string // git http-backend's HOME (no user config)

	mu       sync.Mutex
	pulls    []*pull // by number - 1
	received []Request
	wrong    []string
}

// Request is a request the fake received.
type Request struct {
	Method string
	// Path is the URL's path and RawQuery its query.
	Path, RawQuery string
	Header         http.Header
	Body           []byte
	// Status is the fake's answer.
	Status int
}

// Pull is a pull request as the fake holds it.
type Pull struct {
	Number           int
	Owner, Repo      string
	Title, Body      string
	Head, Base       string // branch names
	Draft            bool
	State            string // open or closed
	Merged           bool
	MergeCommit      string
	Created, Updated time.Time
}

type pull struct {
	Pull
	headSHA, baseSHA string
	closedAt, merged *time.Time
}

// New starts the fake, with a token of its own, and stops it when the test ends. It
// needs git (and git http-backend) on PATH.
func New(t testing.TB) *Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	dir := t.TempDir()
	s := &Server{Token: "ghp_" + random(18), root: filepath.Join(dir, "repos"), git: gitPath, home: filepath.Join(dir, "home")}
	for _, d := range []string{s.root, s.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.ts = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.ts.Close)
	s.URL = s.ts.URL
	s.CAFile = filepath.Join(dir, "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.ts.Certificate().Raw})
	if err := os.WriteFile(s.CAFile, cert, 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// Client is an HTTP client that trusts the fake's certificate.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// AddRepo makes an empty repository OWNER/NAME and returns its bare directory, for the
// test to push a history into (RemoteURL with the token) or read.
func (s *Server) AddRepo(t testing.TB, owner, name string) string {
	t.Helper()
	dir := s.repoDir(owner, name)
	for _, args := range [][]string{
		{"init", "--bare", "--quiet", "--initial-branch=main", dir},
		// http-backend takes pushes only from an authenticated user (REMOTE_USER) unless
		// this is set; the fake authenticates before it runs.
		{"-C", dir, "config", "http.receivepack", "true"},
	} {
		if out, err := s.gitCmd(args...).CombinedOutput(); err != nil {
			t.Fatalf("githubtest: git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return dir
}

// RemoteURL is the repository's https URL, as a clone from GitHub has it.
func (s *Server) RemoteURL(owner, name string) string {
	return s.URL + "/" + owner + "/" + name + ".git"
}

// Branch returns a branch's commit in the repository, "" when there is no such branch.
func (s *Server) Branch(owner, name, branch string) string {
	return s.revParse(s.repoDir(owner, name), branch)
}

// Pull returns pull request n, or false.
func (s *Server) Pull(n int) (Pull, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 1 || n > len(s.pulls) {
		return Pull{}, false
	}
	return s.pulls[n-1].Pull, true
}

// Merge merges pull request n as GitHub's merge button does: the base branch
// fast-forwarded to the head when it can be, else a merge commit of the two.
func (s *Server) Merge(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 1 || n > len(s.pulls) || s.pulls[n-1].State != "open" {
		return fmt.Errorf("githubtest: no open pull request %d", n)
	}
	p := s.pulls[n-1]
	dir := s.repoDir(p.Owner, p.Repo)
	head, base := s.revParse(dir, p.Head), s.revParse(dir, p.Base)
	merge := head
	if s.gitCmd("-C", dir, "merge-base", "--is-ancestor", base, head).Run() != nil {
		out, err := s.gitCmd("-C", dir, "merge-tree", "--write-tree", base, head).Output()
		if err != nil {
			return fmt.Errorf("githubtest: pull request %d does not merge cleanly: %s", n, out)
		}
		tree := strings.Fields(string(out))[0]
		c := s.gitCmd("-C", dir, "commit-tree", tree, "-p", base, "-p", head, "-m", fmt.Sprintf("Merge pull request #%d from %s/%s", n, p.Owner, p.Head))
		c.Env = append(c.Env, "GIT_AUTHOR_NAME=GitHub", "GIT_AUTHOR_EMAIL=noreply@github.com", "GIT_COMMITTER_NAME=GitHub", "GIT_COMMITTER_EMAIL=noreply@github.com")
		out, err = c.Output()
		if err != nil {
			return fmt.Errorf("githubtest: merge commit: %v", err)
		}
		merge = strings.TrimSpace(string(out))
	}
	if out, err := s.gitCmd("-C", dir, "update-ref", "refs/heads/"+p.Base, merge, base).CombinedOutput(); err != nil {
		return fmt.Errorf("githubtest: update %s: %v: %s", p.Base, err, out)
	}
	now := time.Now().UTC().Truncate(time.Second)
	p.State, p.Merged, p.MergeCommit, p.Updated = "closed", true, merge, now
	p.closedAt, p.merged, p.headSHA, p.baseSHA = &now, &now, head, base
	return nil
}

// Close closes pull request n without merging it.
func (s *Server) Close(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 1 || n > len(s.pulls) || s.pulls[n-1].State != "open" {
		return fmt.Errorf("githubtest: no open pull request %d", n)
	}
	p := s.pulls[n-1]
	now := time.Now().UTC().Truncate(time.Second)
	p.State, p.Updated, p.closedAt = "closed", now, &now
	return nil
}

// Requests returns every request served, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.received...)
}

// Wrong returns what was wrong with the requests served, though GitHub may have taken
// them: a test fails on any.
func (s *Server) Wrong() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.wrong...)
}

func (s *Server) wrongf(format string, args ...any) {
	s.wrong = append(s.wrong, fmt.Sprintf(format, args...))
}

func random(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) repoDir(owner, name string) string {
	return filepath.Join(s.root, owner, name+".git")
}

// gitCmd is git with no system or user config.
func (s *Server) gitCmd(args ...string) *exec.Cmd {
	c := exec.Command(s.git, args...)
	c.Env = []string{"HOME=" + s.home, "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}
	return c
}

// revParse is a branch's commit, "" when there is none.
func (s *Server) revParse(dir, branch string) string {
	out, err := s.gitCmd("-C", dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// recorder keeps the status a handler answered.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	// The CGI handler takes no chunked body, which git sends for a large push: the fake
	// reads it whole first.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
	rec := &recorder{ResponseWriter: w}
	if m := gitPath.FindStringSubmatch(r.URL.Path); m != nil {
		s.serveGit(rec, r, m[1], m[2], m[3])
	} else {
		s.serveAPI(rec, r, body)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(body) > 64<<10 {
		body = body[:64<<10] // a pack is kept by its start only
	}
	s.received = append(s.received, Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Status: rec.status})
}
