package task

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/github"
	"github.com/paddockhq/paddock/internal/github/githubtest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// prSetup is a fake GitHub holding o/r with main, a host repository cloned from it
// (origin its https URL) holding an attempt's work as a commit on no branch, as the
// queue leaves it, and a service opening pull requests there.
type prSetup struct {
	fake   *githubtest.Server
	host   string
	commit string
	trace  string // GIT_TRACE of the service's git: every git process's argv
	svc    *Service
	task   wire.Task
}

func newPRSetup(t *testing.T) *prSetup {
	t.Helper()
	testenv.Program(t, "git", "apt-get install git")
	fake := githubtest.New(t)
	fake.AddRepo(t, "o", "r")
	ca := []string{"GIT_SSL_CAINFO=" + fake.CAFile}
	seed := t.TempDir()
	githubtest.Git(t, seed, nil, "init", "--quiet", "--initial-branch=main")
	os.WriteFile(filepath.Join(seed, "a.txt"), []byte("a\n"), 0o644)
	githubtest.Git(t, seed, nil, "add", "a.txt")
	githubtest.Git(t, seed, nil, "commit", "--quiet", "-m", "first")
	auth, err := github.GitAuthEnv(fake.RemoteURL("o", "r"), fake.Token, nil)
	if err != nil {
		t.Fatal(err)
	}
	githubtest.Git(t, seed, append(auth, ca...), "push", "--quiet", fake.RemoteURL("o", "r"), "main")

	host := filepath.Join(t.TempDir(), "host")
	githubtest.Git(t, "/", ca, "clone", "--quiet", fake.RemoteURL("o", "r"), host)
	githubtest.Git(t, host, nil, "checkout", "--quiet", "--detach")
	os.WriteFile(filepath.Join(host, "b.txt"), []byte("b\n"), 0o644)
	githubtest.Git(t, host, nil, "add", "b.txt")
	githubtest.Git(t, host, nil, "commit", "--quiet", "-m", "Add b.txt")
	commit := githubtest.Git(t, host, nil, "rev-parse", "HEAD")
	githubtest.Git(t, host, nil, "checkout", "--quiet", "main")

	trace := filepath.Join(t.TempDir(), "trace")
	passed, failed := true, false
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tk := wire.Task{Name: "add-b", Repo: host, Branch: "main", Prompt: "Add b.txt\n\nIt holds the letter b.", Checks: []string{"test -f b.txt", "make lint"},
		Attempts: []wire.Attempt{
			{N: 2, Agent: "codex", Backend: "bwrap", State: wire.AttemptDone, Passed: &passed, Rank: 1, Why: "checks pass",
				Checks: []wire.CheckResult{{Command: "test -f b.txt", Exit: 0, Millis: 12}, {Command: "make lint", Exit: 0, Output: "lint: 0 problems | ok\n", Millis: 2300}},
				Diff:   wire.DiffStat{Files: 1, Insertions: 1}, Usage: wire.UsageSum{Requests: 7, CostUSD: 0.42},
				Started: now.Add(-3 * time.Minute), Ended: now.Add(-time.Minute), Verdict: &wire.Verdict{Judge: "claude", Score: 8, Reason: "small and right"}},
			{N: 1, Agent: "claude", Backend: "docker", State: wire.AttemptDone, Passed: &failed, Rank: 2,
				Checks: []wire.CheckResult{{Command: "test -f b.txt", Exit: 1}}, Usage: wire.UsageSum{Requests: 9, CostUSD: 0.61}},
		}}
	svc := New(context.Background(), Options{Now: func() time.Time { return now }, GitHub: GitHub{
		APIURL: fake.URL, HTTP: fake.Client(), GitEnv: append(ca, "GIT_TRACE="+trace),
		Token: github.TokenFromEnv(func(k string) string { return map[string]string{"GH_TOKEN": fake.Token}[k] }),
	}})
	return &prSetup{fake: fake, host: host, commit: commit, trace: trace, svc: svc, task: tk}
}

func (p *prSetup) entry() wire.QueueEntry {
	return wire.QueueEntry{ID: 1, Task: p.task.Name, Attempt: 2, Repo: p.host, Into: "main", Mode: wire.QueuePullRequest, Commit: p.commit}
}

// TestPullRequestOpenedAndFollowed: landing as a pull request pushes the attempt's
// commit to a branch of its own on GitHub with the token in git's environment alone,
// opens the pull request from the task (its prompt, checks, cost, attempts), takes it up
// again rather than opening a second after a restart, and follows it to merged.
func TestPullRequestOpenedAndFollowed(t *testing.T) {
	t.Parallel()
	p := newPRSetup(t)
	ctx := context.Background()
	// A pre-push hook of the host repository's: the push runs no hook.
	ran := filepath.Join(t.TempDir(), "hook-ran")
	os.WriteFile(filepath.Join(p.host, ".git", "hooks", "pre-push"), []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o755)
	pr, err := p.svc.openPR(ctx, p.entry(), p.task, p.task.Attempts[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the push ran the host repository's pre-push hook")
	}
	want := wire.PullRequest{Number: 1, URL: p.fake.URL + "/o/r/pull/1", State: "open", Remote: p.fake.RemoteURL("o", "r"), Branch: "paddock/add-b-2"}
	if pr != want {
		t.Fatalf("opened %+v, want %+v", pr, want)
	}
	if got := p.fake.Branch("o", "r", "paddock/add-b-2"); got != p.commit {
		t.Fatalf("GitHub's paddock/add-b-2 is %q, want the attempt's commit %s", got, p.commit)
	}
	got, _ := p.fake.Pull(1)
	if got.Title != "Add b.txt" || got.Base != "main" || got.Head != "paddock/add-b-2" {
		t.Fatalf("GitHub holds %+v", got)
	}
	for _, s := range []string{"> It holds the letter b.", "| `test -f b.txt` | ✅ passed |", "| `make lint` | ✅ passed | 2.3 s |", "lint: 0 problems | ok",
		"~$0.42 (7 requests)", "**time** 2m0s", "**Judge** (claude): 8/10. small and right",
		"| 2 | codex on bwrap | done | ✅ pass | ~$0.42 | 1 files, +1 −0 | **this pull request** |", "| 1 | claude on docker | done | ❌ fail | ~$0.61 |"} {
		if !strings.Contains(got.Body, s) {
			t.Errorf("the body lacks %q:\n%s", s, got.Body)
		}
	}

	// The token went to GitHub with the push, and is in no argv git ran, nor in the
	// host repository's config.
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + p.fake.Token))
	pushed := false
	for _, r := range p.fake.Requests() {
		pushed = pushed || (r.Path == "/o/r.git/git-receive-pack" && r.Status == 200 && r.Header.Get("Authorization") == "Basic "+basic)
	}
	if !pushed {
		t.Fatal("GitHub received no push authenticated with the token")
	}
	trace, err := os.ReadFile(p.trace)
	if err != nil || !strings.Contains(string(trace), "push") {
		t.Fatalf("git's trace of the push: %v: %s", err, trace)
	}
	config, _ := os.ReadFile(filepath.Join(p.host, ".git", "config"))
	for what, text := range map[string]string{"an argv of git": string(trace), "the host repository's config": string(config),
		"the push's arguments": strings.Join(pushArgs(pr.Remote, p.commit, pr.Branch), " ")} {
		if strings.Contains(text, p.fake.Token) || strings.Contains(text, basic) {
			t.Errorf("the token is in %s:\n%s", what, text)
		}
	}

	// Opened again (a restart after GitHub made it, before the queue recorded it): the
	// same pull request.
	again, err := p.svc.openPR(ctx, p.entry(), p.task, p.task.Attempts[0])
	if err != nil || again != want {
		t.Fatalf("opened again: %+v, %v", again, err)
	}
	if _, ok := p.fake.Pull(2); ok {
		t.Fatal("a second pull request was opened")
	}

	e := p.entry()
	e.PR = &pr
	if f, err := p.svc.followPR(ctx, e); err != nil || f.State != "open" {
		t.Fatalf("followed: %+v, %v", f, err)
	}
	if err := p.fake.Merge(1); err != nil {
		t.Fatal(err)
	}
	if f, err := p.svc.followPR(ctx, e); err != nil || f.State != "merged" || f.Number != 1 {
		t.Fatalf("followed after the merge: %+v, %v", f, err)
	}
	for _, w := range p.fake.Wrong() {
		t.Errorf("GitHub would not take this: %s", w)
	}
}

// TestPullRequestRefused: a remote that is not GitHub over https, a token GitHub
// refuses and no token at all each fail with a message saying what to do, and push
// nothing.
func TestPullRequestRefused(t *testing.T) {
	t.Parallel()
	p := newPRSetup(t)
	ctx := context.Background()
	a := p.task.Attempts[0]

	if err := p.svc.prReady(ctx, p.host, ""); err != nil {
		t.Fatalf("origin, GitHub's https address, refused: %v", err)
	}
	githubtest.Git(t, p.host, nil, "remote", "add", "mirror", "git@github.com:o/r.git")
	e := p.entry()
	e.Remote = "mirror"
	_, err := p.svc.openPR(ctx, e, p.task, a)
	if apperr.KindOf(err) != apperr.KindInvalid || !strings.Contains(err.Error(), "not an https URL") || apperr.HintOf(err) == "" {
		t.Errorf("an ssh remote: %v", err)
	}
	if err := p.svc.prReady(ctx, p.host, "ssh://git@github.com/o/r.git"); apperr.KindOf(err) != apperr.KindInvalid || !strings.Contains(err.Error(), "is ssh, not https") {
		t.Errorf("an ssh remote, before landing: %v", err)
	}
	e.Remote = "upstream"
	if _, err := p.svc.openPR(ctx, e, p.task, a); apperr.KindOf(err) != apperr.KindNotFound || !strings.Contains(err.Error(), `no remote "upstream"`) {
		t.Errorf("a remote the repository lacks: %v", err)
	}
	if err := p.svc.prReady(ctx, p.host, "upstream"); apperr.KindOf(err) != apperr.KindNotFound {
		t.Errorf("a remote the repository lacks, before landing: %v", err)
	}

	opts := p.svc.opts
	opts.GitHub.Token = func() (string, error) { return "ghp_not_it", nil }
	wrong := New(ctx, opts)
	_, err = wrong.openPR(ctx, p.entry(), p.task, a)
	if apperr.KindOf(err) != apperr.KindInvalid || !strings.Contains(err.Error(), "GitHub refused paddock's token for a push to o/r") || apperr.HintOf(err) != github.TokenHint {
		t.Errorf("a wrong token: %v (hint %q)", err, apperr.HintOf(err))
	}
	opts.GitHub.Token = nil
	none := New(ctx, opts)
	if _, err := none.openPR(ctx, p.entry(), p.task, a); apperr.KindOf(err) != apperr.KindUnavailable || apperr.HintOf(err) != github.TokenHint {
		t.Errorf("no token: %v", err)
	}
	if err := none.prReady(ctx, p.host, ""); apperr.KindOf(err) != apperr.KindUnavailable {
		t.Errorf("no token, before landing: %v", err)
	}
	if b := p.fake.Branch("o", "r", "paddock/add-b-2"); b != "" {
		t.Errorf("a refused landing pushed paddock/add-b-2 (%s)", b)
	}
	if _, ok := p.fake.Pull(1); ok {
		t.Error("a refused landing opened a pull request")
	}
}

func TestPRTitle(t *testing.T) {
	t.Parallel()
	for prompt, want := range map[string]string{
		"\n  Fix the flaky test  \nin pkg/x": "Fix the flaky test",
		strings.Repeat("é", 120):             strings.Repeat("é", 99) + "…",
	} {
		if got := prTitle(prompt); got != want {
			t.Errorf("prTitle(%q) = %q, want %q", prompt, got, want)
		}
	}
}
