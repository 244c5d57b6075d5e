package githubtest

import (
	"encoding/base64"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// gitPath matches git's smart HTTP paths: /OWNER/NAME(.git)/REST.
var gitPath = regexp.MustCompile(`^/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?(/(?:info/refs|git-upload-pack|git-receive-pack|HEAD|objects/.*))$`)

// serveGit runs git http-backend for a repository; a push needs the token, as GitHub's
// does (and so would a fetch of a private repository: the fake's are public).
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request, owner, name, rest string) {
	dir := s.repoDir(owner, name)
	if _, err := os.Stat(dir); err != nil {
		http.Error(w, "Repository not found.", http.StatusNotFound)
		return
	}
	push := rest == "/git-receive-pack" || (rest == "/info/refs" && r.URL.Query().Get("service") == "git-receive-pack")
	user := ""
	if push {
		u, pass, ok := r.BasicAuth()
		if !ok || u == "" || pass != s.Token {
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			msg := "Invalid username or token. Password authentication is not supported for Git operations."
			if !ok {
				msg = "Authentication required."
			}
			http.Error(w, msg, http.StatusUnauthorized)
			return
		}
		user = u
	}
	h := &cgi.Handler{
		Path: s.git,
		Args: []string{"http-backend"},
		Root: "/" + owner + "/" + name + ".git",
		Env: []string{
			"GIT_PROJECT_ROOT=" + dir,
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=" + user,
			"HOME=" + s.home,
			"GIT_CONFIG_NOSYSTEM=1",
		},
	}
	// The handler's PATH_INFO is the path under Root, which may have come without .git.
	r2 := r.Clone(r.Context())
	r2.URL.Path = h.Root + rest
	h.ServeHTTP(w, r2)
}

// BasicToken is the Authorization header git sends with the token, as GitHub takes it.
func BasicToken(token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
}

// Git runs git in dir as a test's own (no system or user config, no prompt for
// credentials, an author and committer of its own) with env added to the environment,
// and returns its output trimmed; it fails the test on an error.
func Git(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(), "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
