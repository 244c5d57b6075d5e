package github_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/github"
	"github.com/paddockhq/paddock/internal/github/githubtest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// seeded is a fake with a repository o/r holding main and a branch feature one commit
// ahead, pushed there over https with the token (GitAuthEnv).
func seeded(t *testing.T) (*githubtest.Server, github.Repo) {
	t.Helper()
	testenv.Program(t, "git", "apt-get install git")
	fake := githubtest.New(t)
	fake.AddRepo(t, "o", "r")
	local := t.TempDir()
	githubtest.Git(t, local, nil, "init", "--quiet", "--initial-branch=main")
	os.WriteFile(filepath.Join(local, "a.txt"), []byte("a\n"), 0o644)
	githubtest.Git(t, local, nil, "add", "a.txt")
	githubtest.Git(t, local, nil, "commit", "--quiet", "-m", "first")
	githubtest.Git(t, local, nil, "checkout", "--quiet", "-b", "feature")
	os.WriteFile(filepath.Join(local, "b.txt"), []byte("b\n"), 0o644)
	githubtest.Git(t, local, nil, "add", "b.txt")
	githubtest.Git(t, local, nil, "commit", "--quiet", "-m", "the feature")
	env, err := github.GitAuthEnv(fake.RemoteURL("o", "r"), fake.Token, nil)
	if err != nil {
		t.Fatal(err)
	}
	githubtest.Git(t, local, append(env, "GIT_SSL_CAINFO="+fake.CAFile), "push", "--quiet", fake.RemoteURL("o", "r"), "main", "feature")
	return fake, github.Repo{Owner: "o", Name: "r"}
}

func noWrong(t *testing.T, fake *githubtest.Server) {
	t.Helper()
	for _, w := range fake.Wrong() {
		t.Errorf("GitHub would not take this: %s", w)
	}
}

// TestPullOpenedAndFollowedToMerged: a pull request opened with the client is on the fake
// as sent, its state follows the fake's to merged, and the branch's listing finds it.
func TestPullOpenedAndFollowedToMerged(t *testing.T) {
	t.Parallel()
	fake, repo := seeded(t)
	ctx := context.Background()
	c := &github.Client{APIURL: fake.URL, Token: fake.Token, HTTP: fake.Client()}
	p, err := c.CreatePull(ctx, repo, github.NewPull{Title: "Add b", Head: "feature", Base: "main", Body: "the prompt"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Number != 1 || p.Status() != "open" || p.HTMLURL != fake.URL+"/o/r/pull/1" || p.Head.Ref != "feature" || p.Base.Ref != "main" {
		t.Fatalf("opened %+v", p)
	}
	got, _ := fake.Pull(1)
	if got.Title != "Add b" || got.Body != "the prompt" || got.Head != "feature" || got.Base != "main" {
		t.Fatalf("GitHub holds %+v", got)
	}
	if p, err = c.GetPull(ctx, repo, 1); err != nil || p.Status() != "open" {
		t.Fatalf("followed: %+v, %v", p, err)
	}
	if err := fake.Merge(1); err != nil {
		t.Fatal(err)
	}
	if p, err = c.GetPull(ctx, repo, 1); err != nil || p.Status() != "merged" {
		t.Fatalf("followed after the merge: %+v, %v", p, err)
	}
	if main := fake.Branch("o", "r", "main"); main != fake.Branch("o", "r", "feature") {
		t.Fatalf("main is %s after the merge, not the feature's commit", main)
	}
	ps, err := c.PullsOf(ctx, repo, "feature")
	if err != nil || len(ps) != 1 || ps[0].Number != 1 || ps[0].Status() != "merged" {
		t.Fatalf("the branch's pull requests: %+v, %v", ps, err)
	}
	for _, r := range fake.Requests() {
		if strings.HasPrefix(r.Path, "/repos/") && r.Header.Get("Authorization") != "Bearer "+fake.Token {
			t.Errorf("%s %s went with Authorization %q", r.Method, r.Path, r.Header.Get("Authorization"))
		}
	}
	noWrong(t, fake)
}

// TestGitHubRefusalsSayWhatToDo: what GitHub refuses comes back as a message a user can
// act on, of the kind the CLI maps to its exit code.
func TestGitHubRefusalsSayWhatToDo(t *testing.T) {
	t.Parallel()
	fake, repo := seeded(t)
	ctx := context.Background()
	good := &github.Client{APIURL: fake.URL, Token: fake.Token, HTTP: fake.Client()}
	if _, err := good.CreatePull(ctx, repo, github.NewPull{Title: "Add b", Head: "feature", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	bad := &github.Client{APIURL: fake.URL, Token: "ghp_not_it", HTTP: fake.Client()}
	for _, tc := range []struct {
		name string
		c    *github.Client
		repo github.Repo
		pull github.NewPull
		kind apperr.Kind
		says string
	}{
		{"wrong token", bad, repo, github.NewPull{Title: "t", Head: "feature", Base: "main"}, apperr.KindInvalid, "GitHub refused paddock's token (Bad credentials)"},
		{"no such repository", good, github.Repo{Owner: "o", Name: "nope"}, github.NewPull{Title: "t", Head: "feature", Base: "main"}, apperr.KindNotFound, "GitHub has no o/nope that paddock's token can see"},
		{"no such head", good, repo, github.NewPull{Title: "t", Head: "gone", Base: "main"}, apperr.KindInvalid, "Validation Failed: head invalid"},
		{"no commits", good, repo, github.NewPull{Title: "t", Head: "main", Base: "feature"}, apperr.KindInvalid, "No commits between feature and main"},
		{"open already", good, repo, github.NewPull{Title: "t", Head: "feature", Base: "main"}, apperr.KindConflict, "A pull request already exists for o:feature."},
		{"no title", good, repo, github.NewPull{Head: "feature", Base: "main"}, apperr.KindInvalid, `"title" wasn't supplied`},
	} {
		_, err := tc.c.CreatePull(ctx, tc.repo, tc.pull)
		err = github.Explain(err, tc.repo)
		if err == nil || apperr.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.says) || apperr.HintOf(err) == "" {
			t.Errorf("%s: %v (kind %s, hint %q), want %s saying %q", tc.name, err, apperr.KindOf(err), apperr.HintOf(err), tc.kind, tc.says)
		}
	}
	if _, err := good.GetPull(ctx, repo, 7); apperr.KindOf(github.Explain(err, repo)) != apperr.KindNotFound {
		t.Errorf("following a pull request GitHub lacks: %v", err)
	}
	if _, err := bad.GetPull(ctx, repo, 1); !strings.Contains(github.Explain(err, repo).Error(), "Bad credentials") {
		t.Errorf("following with a wrong token: %v", err)
	}
	noWrong(t, fake)
}

// TestPushNeedsTheToken: the fake's git takes a push only with its token, as GitHub
// does; a refused push leaves the branch where it was.
func TestPushNeedsTheToken(t *testing.T) {
	t.Parallel()
	fake, _ := seeded(t)
	local := t.TempDir()
	githubtest.Git(t, local, []string{"GIT_SSL_CAINFO=" + fake.CAFile}, "clone", "--quiet", fake.RemoteURL("o", "r"), ".")
	githubtest.Git(t, local, nil, "commit", "--quiet", "--allow-empty", "-m", "more")
	before := fake.Branch("o", "r", "main")
	env, _ := github.GitAuthEnv(fake.RemoteURL("o", "r"), "ghp_not_it", nil)
	cmd := exec.Command("git", "-C", local, "push", "origin", "HEAD:main")
	cmd.Env = append(os.Environ(), append(env, "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(), "GIT_TERMINAL_PROMPT=0", "GIT_SSL_CAINFO="+fake.CAFile)...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a push with a wrong token went through: %s", out)
	}
	refused := false
	for _, r := range fake.Requests() {
		refused = refused || (r.Status == 401 && r.RawQuery == "service=git-receive-pack" && r.Header.Get("Authorization") == githubtest.BasicToken("ghp_not_it"))
	}
	if !refused {
		t.Fatalf("the fake did not refuse the wrong token's push: %+v", fake.Requests())
	}
	if after := fake.Branch("o", "r", "main"); after != before {
		t.Fatalf("main moved from %s to %s on a refused push", before, after)
	}
}

func TestParseRemote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		remote, api string
		want        string // OWNER/NAME, or what the refusal says
	}{
		{"https://github.com/acme/widgets.git", "", "acme/widgets"},
		{"https://github.com/acme/widgets", "https://api.github.com", "acme/widgets"},
		{"https://ghe.example.com/acme/widgets.git", "https://ghe.example.com/api/v3", "acme/widgets"},
		{"git@github.com:acme/widgets.git", "", "not an https URL"},
		{"ssh://git@github.com/acme/widgets.git", "", "is ssh, not https"},
		{"file:///srv/widgets.git", "", "is file, not https"},
		{"/srv/widgets.git", "", "not an https URL"},
		{"https://gitlab.com/acme/widgets.git", "", "not on github.com"},
		{"https://me:secret@github.com/acme/widgets.git", "", "carries credentials"},
		{"https://github.com/acme", "", "names no repository"},
	} {
		r, err := github.ParseRemote(tc.remote, tc.api)
		got := r.String()
		if err != nil {
			got = err.Error()
			if apperr.KindOf(err) != apperr.KindInvalid || strings.Contains(got, "secret") {
				t.Errorf("%s: %v", tc.remote, err)
			}
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("ParseRemote(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// TestGitAuthEnvKeepsTheUsersConfig: the token's header is added after the config the
// environment already carries, not over it.
func TestGitAuthEnvKeepsTheUsersConfig(t *testing.T) {
	t.Parallel()
	env, err := github.GitAuthEnv("https://github.com/o/r.git", "T", []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Me"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GIT_CONFIG_KEY_1=http.https://github.com/.extraHeader", "GIT_CONFIG_VALUE_1=Authorization: Basic eC1hY2Nlc3MtdG9rZW46VA==",
		"GIT_CONFIG_KEY_2=credential.helper", "GIT_CONFIG_VALUE_2=", "GIT_CONFIG_COUNT=3",
	}
	if strings.Join(env, "\n") != strings.Join(want, "\n") {
		t.Fatalf("env:\n%s\nwant:\n%s", strings.Join(env, "\n"), strings.Join(want, "\n"))
	}
	if _, err := github.GitAuthEnv("http://github.com/o/r.git", "T", nil); err == nil {
		t.Fatal("a token for a plain http remote")
	}
}

// TestTokenFromEnv: GH_TOKEN, else GITHUB_TOKEN, as GitHub's CLI reads them; neither is
// a refusal saying where the token goes.
func TestTokenFromEnv(t *testing.T) {
	t.Parallel()
	for env, want := range map[[2]string]string{{"a", "b"}: "a", {"", "b"}: "b", {" ", ""}: ""} {
		get := func(k string) string { return map[string]string{"GH_TOKEN": env[0], "GITHUB_TOKEN": env[1]}[k] }
		tok, err := github.TokenFromEnv(get)()
		if tok != want || (want == "" && (apperr.KindOf(err) != apperr.KindUnavailable || apperr.HintOf(err) != github.TokenHint)) {
			t.Errorf("GH_TOKEN=%q GITHUB_TOKEN=%q: %q, %v", env[0], env[1], tok, err)
		}
	}
}
