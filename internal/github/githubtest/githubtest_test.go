package githubtest_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/github"
	"github.com/paddockhq/paddock/internal/github/githubtest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestFakeRefusesAsGitHubDoes: the fake answers a request GitHub would refuse with
// GitHub's status and message, and records what GitHub would take but a careful client
// should not send.
func TestFakeRefusesAsGitHubDoes(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "git", "apt-get install git")
	fake := githubtest.New(t)
	fake.AddRepo(t, "o", "r")
	send := func(method, path, body string, header map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, fake.URL+path, strings.NewReader(body))
		req.Header.Set("User-Agent", "test")
		for k, v := range header {
			switch {
			case k == "User-Agent" && v == "":
				req.Header[k] = []string{""} // sent as none: Go's client would add its own
			case v == "":
				req.Header.Del(k)
			default:
				req.Header.Set(k, v)
			}
		}
		resp, err := fake.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	ok := map[string]string{"Authorization": "Bearer " + fake.Token, "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range ok {
			h[a] = b
		}
		h[k] = v
		return h
	}
	for _, tc := range []struct {
		name         string
		method, path string
		body         string
		header       map[string]string
		status       int
		says         string
	}{
		{"no token", "GET", "/repos/o/r/pulls/1", "", with("Authorization", ""), 401, "Requires authentication"},
		{"another token", "GET", "/repos/o/r/pulls/1", "", with("Authorization", "Bearer ghp_other"), 401, "Bad credentials"},
		{"no User-Agent", "GET", "/repos/o/r/pulls/1", "", with("User-Agent", ""), 403, "User-Agent"},
		{"an API version GitHub lacks", "GET", "/repos/o/r/pulls/1", "", with("X-GitHub-Api-Version", "2021-01-01"), 400, "Unsupported 'X-GitHub-Api-Version'"},
		{"no such pull request", "GET", "/repos/o/r/pulls/1", "", ok, 404, "Not Found"},
		{"no such repository", "GET", "/repos/o/nope/pulls", "", ok, 404, "Not Found"},
		{"not JSON", "POST", "/repos/o/r/pulls", "{", with("Content-Type", "application/json"), 400, "Problems parsing JSON"},
		{"no head", "POST", "/repos/o/r/pulls", `{"title":"t","base":"main"}`, with("Content-Type", "application/json"), 422, `\"head\" wasn't supplied`},
		{"a head of another owner", "POST", "/repos/o/r/pulls", `{"title":"t","head":"x:b","base":"main"}`, with("Content-Type", "application/json"), 422, `"field":"head","code":"invalid"`},
		{"a draft not a boolean", "POST", "/repos/o/r/pulls", `{"title":"t","head":"b","base":"main","draft":"yes"}`, with("Content-Type", "application/json"), 422, "is not a boolean"},
	} {
		status, body := send(tc.method, tc.path, tc.body, tc.header)
		if status != tc.status || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, status, body, tc.status, tc.says)
		}
	}
	if w := fake.Wrong(); len(w) != 1 || !strings.Contains(w[0], "no User-Agent") {
		t.Errorf("recorded as wrong: %q", w)
	}
	send("GET", "/repos/o/r/pulls", "", with("Accept", "application/json"))
	if w := fake.Wrong(); len(w) != 2 || !strings.Contains(w[1], `Accept "application/json"`) {
		t.Errorf("recorded as wrong: %q", w)
	}
}

// TestFakeClosesAPullRequest: a pull request the test closes is closed, not merged, and
// its base branch stays where it was.
func TestFakeClosesAPullRequest(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "git", "apt-get install git")
	fake := githubtest.New(t)
	dir := fake.AddRepo(t, "o", "r")
	git := func(args ...string) {
		t.Helper()
		cmd := testGit(dir, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	// Two commits written straight into the bare repository: main, and topic on it.
	main := strings.TrimSpace(output(t, testGit(dir, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit-tree", "-m", "first", "4b825dc642cb6eb9a060e54bf8d69288fbee4904")))
	topic := strings.TrimSpace(output(t, testGit(dir, "-c", "user.name=A", "-c", "user.email=a@example.com", "commit-tree", "-p", main, "-m", "topic", "4b825dc642cb6eb9a060e54bf8d69288fbee4904")))
	git("update-ref", "refs/heads/main", main)
	git("update-ref", "refs/heads/topic", topic)

	c := &github.Client{APIURL: fake.URL, Token: fake.Token, HTTP: fake.Client()}
	repo := github.Repo{Owner: "o", Name: "r"}
	ctx := context.Background()
	p, err := c.CreatePull(ctx, repo, github.NewPull{Title: "t", Head: "topic", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Draft || p.Head.SHA != topic || p.Base.SHA != main {
		t.Fatalf("opened %+v", p)
	}
	if err := fake.Close(p.Number); err != nil {
		t.Fatal(err)
	}
	if p, err = c.GetPull(ctx, repo, p.Number); err != nil || p.Status() != "closed" || p.Merged {
		t.Fatalf("closed: %+v, %v", p, err)
	}
	if got := fake.Branch("o", "r", "main"); got != main {
		t.Fatalf("main moved to %s on a close", got)
	}
	if err := fake.Merge(p.Number); err == nil {
		t.Fatal("a closed pull request merged")
	}
	if w := fake.Wrong(); len(w) > 0 {
		t.Errorf("recorded as wrong: %q", w)
	}
}

// testGit is git in dir with no system config.
func testGit(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	return cmd
}

func output(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return string(out)
}
