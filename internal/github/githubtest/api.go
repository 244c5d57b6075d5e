package githubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// pullsPath matches /repos/OWNER/NAME/pulls and /repos/OWNER/NAME/pulls/N.
var pullsPath = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls(?:/([^/]+))?/?$`)

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.apiHeaders(w, r) {
		return
	}
	m := pullsPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		s.wrongf("%s %s: no such endpoint", r.Method, r.URL.Path)
		apiError(w, http.StatusNotFound, "Not Found", "https://docs.github.com/rest")
		return
	}
	owner, name, num := m[1], m[2], m[3]
	dir := s.repoDir(owner, name)
	if _, err := os.Stat(dir); err != nil {
		apiError(w, http.StatusNotFound, "Not Found", docs(r, num))
		return
	}
	switch {
	case num == "" && r.Method == http.MethodPost:
		s.createPull(w, r, owner, name, dir, body)
	case num == "" && r.Method == http.MethodGet:
		s.listPulls(w, r, owner, name)
	case num != "" && r.Method == http.MethodGet:
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 || n > len(s.pulls) || s.pulls[n-1].Owner != owner || s.pulls[n-1].Repo != name {
			apiError(w, http.StatusNotFound, "Not Found", docs(r, num))
			return
		}
		writeJSON(w, http.StatusOK, s.pullJSON(s.pulls[n-1], true))
	default:
		s.wrongf("%s %s: method not served", r.Method, r.URL.Path)
		apiError(w, http.StatusNotFound, "Not Found", "https://docs.github.com/rest")
	}
}

// apiHeaders checks what GitHub checks of every API request, answering as it does when
// it refuses one.
func (s *Server) apiHeaders(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("User-Agent") == "" {
		s.wrongf("%s %s: no User-Agent", r.Method, r.URL.Path)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "Request forbidden by administrative rules. Please make sure your request has a User-Agent header (https://docs.github.com/en/rest/overview/resources-in-the-rest-api#user-agent-required). Check https://developer.github.com for other possible causes.\n")
		return false
	}
	if v := r.Header.Get("X-GitHub-Api-Version"); v == "" {
		s.wrongf("%s %s: no X-GitHub-Api-Version (GitHub takes the default, %s)", r.Method, r.URL.Path, Version)
	} else if v != Version {
		apiError(w, http.StatusBadRequest, fmt.Sprintf("Unsupported 'X-GitHub-Api-Version' header: %s. Supported versions: %s", v, Version), "https://docs.github.com/rest/overview/api-versions")
		return false
	}
	if a := r.Header.Get("Accept"); a != "application/vnd.github+json" {
		s.wrongf("%s %s: Accept %q, want application/vnd.github+json", r.Method, r.URL.Path, a)
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		apiError(w, http.StatusUnauthorized, "Requires authentication", "https://docs.github.com/rest")
		return false
	}
	scheme, tok, _ := strings.Cut(auth, " ")
	if (!strings.EqualFold(scheme, "Bearer") && !strings.EqualFold(scheme, "token")) || tok != s.Token {
		apiError(w, http.StatusUnauthorized, "Bad credentials", "https://docs.github.com/rest")
		return false
	}
	return true
}

// docs is the documentation_url GitHub names for an endpoint.
func docs(r *http.Request, num string) string {
	switch {
	case num != "":
		return "https://docs.github.com/rest/pulls/pulls#get-a-pull-request"
	case r.Method == http.MethodPost:
		return "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
	}
	return "https://docs.github.com/rest/pulls/pulls#list-pull-requests"
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request, owner, name, dir string, body []byte) {
	const doc = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.wrongf("POST %s: Content-Type %q, want application/json", r.URL.Path, ct)
	}
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		apiError(w, http.StatusBadRequest, "Problems parsing JSON", doc)
		return
	}
	str := func(k string) (string, bool) {
		v, ok := in[k].(string)
		return v, ok
	}
	for _, k := range []string{"head", "base", "title"} {
		if v, ok := str(k); !ok || v == "" {
			if _, present := in[k]; present && !ok {
				apiError(w, http.StatusUnprocessableEntity, fmt.Sprintf("Invalid request.\n\nFor 'properties/%s', %s is not a string.", k, jsonText(in[k])), doc)
				return
			}
			apiError(w, http.StatusUnprocessableEntity, fmt.Sprintf("Invalid request.\n\n%q wasn't supplied.", k), doc)
			return
		}
	}
	if d, present := in["draft"]; present {
		if _, ok := d.(bool); !ok {
			apiError(w, http.StatusUnprocessableEntity, fmt.Sprintf("Invalid request.\n\nFor 'properties/draft', %s is not a boolean.", jsonText(d)), doc)
			return
		}
	}
	head, _ := str("head")
	base, _ := str("base")
	title, _ := str("title")
	text, _ := str("body")
	draft, _ := in["draft"].(bool)
	// head is BRANCH, or OWNER:BRANCH for a branch of a fork (the fake has none).
	headBranch := head
	if o, b, ok := strings.Cut(head, ":"); ok {
		if o != owner {
			validation(w, doc, fieldError{Resource: "PullRequest", Field: "head", Code: "invalid"})
			return
		}
		headBranch = b
	}
	headSHA, baseSHA := s.revParse(dir, headBranch), s.revParse(dir, base)
	var errs []fieldError
	if headSHA == "" {
		errs = append(errs, fieldError{Resource: "PullRequest", Field: "head", Code: "invalid"})
	}
	if baseSHA == "" {
		errs = append(errs, fieldError{Resource: "PullRequest", Field: "base", Code: "invalid"})
	}
	if len(errs) > 0 {
		validation(w, doc, errs...)
		return
	}
	for _, p := range s.pulls {
		if p.Owner == owner && p.Repo == name && p.Head == headBranch && p.Base == base && p.State == "open" {
			validation(w, doc, fieldError{Resource: "PullRequest", Code: "custom", Message: fmt.Sprintf("A pull request already exists for %s:%s.", owner, headBranch)})
			return
		}
	}
	if s.gitCmd("-C", dir, "merge-base", "--is-ancestor", headSHA, baseSHA).Run() == nil {
		validation(w, doc, fieldError{Resource: "PullRequest", Code: "custom", Message: fmt.Sprintf("No commits between %s and %s", base, headBranch)})
		return
	}
	now := time.Now().UTC().Truncate(time.Second)
	p := &pull{Pull: Pull{Number: len(s.pulls) + 1, Owner: owner, Repo: name, Title: title, Body: text, Head: headBranch, Base: base,
		Draft: draft, State: "open", Created: now, Updated: now}, headSHA: headSHA, baseSHA: baseSHA}
	s.pulls = append(s.pulls, p)
	w.Header().Set("Location", fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.URL, owner, name, p.Number))
	writeJSON(w, http.StatusCreated, s.pullJSON(p, true))
}

// listPulls is GET /repos/OWNER/NAME/pulls: state (open, closed, all; default open),
// head (OWNER:BRANCH) and base filter; newest first.
func (s *Server) listPulls(w http.ResponseWriter, r *http.Request, owner, name string) {
	q := r.URL.Query()
	state := q.Get("state")
	switch state {
	case "":
		state = "open"
	case "open", "closed", "all":
	default:
		validation(w, "https://docs.github.com/rest/pulls/pulls#list-pull-requests", fieldError{Resource: "Search", Field: "state", Code: "invalid"})
		return
	}
	headOwner, headBranch, byHead := strings.Cut(q.Get("head"), ":")
	if q.Get("head") != "" && !byHead {
		s.wrongf("GET %s: head %q is not OWNER:BRANCH (GitHub then ignores it)", r.URL.Path, q.Get("head"))
	}
	out := []map[string]any{}
	for i := len(s.pulls) - 1; i >= 0; i-- {
		p := s.pulls[i]
		if p.Owner != owner || p.Repo != name || (state != "all" && p.State != state) {
			continue
		}
		if byHead && (headOwner != owner || headBranch != p.Head) {
			continue
		}
		if b := q.Get("base"); b != "" && b != p.Base {
			continue
		}
		out = append(out, s.pullJSON(p, false))
	}
	writeJSON(w, http.StatusOK, out)
}

// pullJSON is a pull request as GitHub answers it; full is the single pull request's
// answer (with merged and the counts), not a listing's.
func (s *Server) pullJSON(p *pull, full bool) map[string]any {
	dir := s.repoDir(p.Owner, p.Repo)
	if p.State == "open" {
		if h := s.revParse(dir, p.Head); h != "" {
			p.headSHA = h
		}
		if b := s.revParse(dir, p.Base); b != "" {
			p.baseSHA = b
		}
	}
	api := fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.URL, p.Owner, p.Repo, p.Number)
	html := fmt.Sprintf("%s/%s/%s/pull/%d", s.URL, p.Owner, p.Repo, p.Number)
	repo := map[string]any{"name": p.Repo, "full_name": p.Owner + "/" + p.Repo, "owner": map[string]any{"login": p.Owner},
		"html_url": s.URL + "/" + p.Owner + "/" + p.Repo, "clone_url": s.RemoteURL(p.Owner, p.Repo), "private": false}
	ref := func(branch, sha string) map[string]any {
		return map[string]any{"label": p.Owner + ":" + branch, "ref": branch, "sha": sha, "user": map[string]any{"login": p.Owner}, "repo": repo}
	}
	var mergeSHA any
	if p.MergeCommit != "" {
		mergeSHA = p.MergeCommit
	}
	out := map[string]any{
		"url": api, "id": 1000 + p.Number, "node_id": "PR_" + strconv.Itoa(p.Number), "html_url": html,
		"diff_url": html + ".diff", "patch_url": html + ".patch", "issue_url": fmt.Sprintf("%s/repos/%s/%s/issues/%d", s.URL, p.Owner, p.Repo, p.Number),
		"number": p.Number, "state": p.State, "locked": false, "title": p.Title, "user": map[string]any{"login": "paddock-token-owner"},
		"body": p.Body, "created_at": p.Created, "updated_at": p.Updated, "closed_at": p.closedAt, "merged_at": p.merged,
		"merge_commit_sha": mergeSHA, "draft": p.Draft, "head": ref(p.Head, p.headSHA), "base": ref(p.Base, p.baseSHA),
		"author_association": "OWNER",
	}
	if full {
		out["merged"] = p.Merged
		out["mergeable"] = nil
		out["comments"], out["review_comments"], out["commits"] = 0, 0, s.count(dir, p.baseSHA, p.headSHA)
		out["maintainer_can_modify"] = false
	}
	return out
}

// count is the number of commits in to that from lacks.
func (s *Server) count(dir, from, to string) int {
	out, err := s.gitCmd("-C", dir, "rev-list", "--count", from+".."+to).Output()
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

type fieldError struct {
	Resource string `json:"resource"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func validation(w http.ResponseWriter, doc string, errs ...fieldError) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": errs, "documentation_url": doc, "status": "422"})
}

func apiError(w http.ResponseWriter, status int, msg, doc string) {
	writeJSON(w, status, map[string]any{"message": msg, "documentation_url": doc, "status": strconv.Itoa(status)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-GitHub-Media-Type", "github.v3; format=json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
