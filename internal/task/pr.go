package task

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/github"
	"github.com/paddockhq/paddock/internal/gitsync"
)

// DefaultRemote is the remote a pull request's branch is pushed to unless the landing
// names another.
const DefaultRemote = "origin"

// prReady refuses a landing as a pull request that could not be opened: no GitHub token,
// a remote (default origin) the host repository lacks, or one that is not the https
// address of a repository on the GitHub paddock opens pull requests on.
func (s *Service) prReady(ctx context.Context, repo, remote string) error {
	if _, err := s.githubToken(); err != nil {
		return err
	}
	remoteURL, err := remoteURLOf(ctx, &gitsync.Git{Repo: repo}, remote)
	if err != nil {
		return err
	}
	_, err = github.ParseRemote(remoteURL, s.opts.GitHub.APIURL)
	return err
}

// openPR pushes an attempt's work (the commit the queue fetched into the host
// repository, e.Commit) to the remote as a branch of its own and opens a pull request
// for it into e.Into. The remote is e.Remote (a name or an https URL; default origin);
// e.PR, when set, may name another, and the branch (default paddock/TASK-N). The push
// runs with the host's hardened git (no hooks), the token only in git's environment; a
// pull request GitHub already holds for the branch (an opening cut short by a restart)
// is taken up rather than opened twice.
func (s *Service) openPR(ctx context.Context, e wire.QueueEntry, t wire.Task, a wire.Attempt) (wire.PullRequest, error) {
	var pr wire.PullRequest
	if e.PR != nil {
		pr = *e.PR
	}
	if pr.Remote == "" {
		pr.Remote = e.Remote
	}
	if pr.Branch == "" {
		pr.Branch = fmt.Sprintf("paddock/%s-%d", t.Name, a.N)
	}
	if e.Commit == "" {
		return pr, fmt.Errorf("open a pull request for %s/%d: no commit of its work in %s", t.Name, a.N, e.Repo)
	}
	token, err := s.githubToken()
	if err != nil {
		return pr, err
	}
	g := &gitsync.Git{Repo: e.Repo}
	remoteURL, err := remoteURLOf(ctx, g, pr.Remote)
	if err != nil {
		return pr, err
	}
	repo, err := github.ParseRemote(remoteURL, s.opts.GitHub.APIURL)
	if err != nil {
		return pr, err
	}
	pr.Remote = remoteURL
	if err := s.pushBranch(ctx, g, remoteURL, repo, token, e.Commit, pr.Branch); err != nil {
		return pr, err
	}
	c := s.githubClient(token)
	p, err := c.CreatePull(ctx, repo, github.NewPull{Title: prTitle(t.Prompt), Head: pr.Branch, Base: e.Into, Body: prBody(t, a, s.opts.Now())})
	if ge, ok := github.AsError(err); ok && ge.Exists() {
		p, err = openPullOf(ctx, c, repo, pr.Branch, e.Into, err)
	}
	if err != nil {
		return pr, github.Explain(err, repo)
	}
	pr.Number, pr.URL, pr.State = p.Number, p.HTMLURL, p.Status()
	return pr, nil
}

// followPR reads the state of an entry's pull request on the forge: open, closed or
// merged.
func (s *Service) followPR(ctx context.Context, e wire.QueueEntry) (wire.PullRequest, error) {
	if e.PR == nil || e.PR.Number == 0 {
		return wire.PullRequest{}, fmt.Errorf("follow the pull request of %s/%d: none was opened", e.Task, e.Attempt)
	}
	pr := *e.PR
	repo, err := github.ParseRemote(pr.Remote, s.opts.GitHub.APIURL)
	if err != nil {
		return pr, err
	}
	token, err := s.githubToken()
	if err != nil {
		return pr, err
	}
	p, err := s.githubClient(token).GetPull(ctx, repo, pr.Number)
	if err != nil {
		return pr, github.Explain(err, repo)
	}
	pr.State = p.Status()
	if p.HTMLURL != "" {
		pr.URL = p.HTMLURL
	}
	return pr, nil
}

// githubToken is the token pull requests are opened with.
func (s *Service) githubToken() (string, error) {
	if s.opts.GitHub.Token == nil {
		return "", apperr.Unavailable(github.TokenHint, "this daemon has no GitHub token: pull requests need one")
	}
	tok, err := s.opts.GitHub.Token()
	if err == nil && tok == "" {
		err = apperr.Unavailable(github.TokenHint, "this daemon has no GitHub token: pull requests need one")
	}
	return tok, err
}

func (s *Service) githubClient(token string) *github.Client {
	return &github.Client{APIURL: s.opts.GitHub.APIURL, Token: token, HTTP: s.opts.GitHub.HTTP}
}

// remoteURLOf is the push URL of a remote of the host repository (as git rewrites it
// with pushInsteadOf), or remote itself when it is a URL.
func remoteURLOf(ctx context.Context, g *gitsync.Git, remote string) (string, error) {
	if remote == "" {
		remote = DefaultRemote
	}
	if strings.Contains(remote, "://") {
		return remote, nil
	}
	out, err := g.Run(ctx, "remote", "get-url", "--push", "--", remote)
	if err != nil {
		return "", apperr.NotFound(fmt.Sprintf("`git -C %s remote -v` lists its remotes; add the GitHub repository's with `git remote add %s https://github.com/OWNER/REPO.git`", g.Repo, remote),
			"%s has no remote %q to push the pull request's branch to", g.Repo, remote)
	}
	return strings.TrimSpace(out), nil
}

// pushBranch pushes commit to the remote's branch (moving it wherever it was: the
// branch is paddock's own) with the host's hardened git and the token in its
// environment alone.
func (s *Service) pushBranch(ctx context.Context, g *gitsync.Git, remoteURL string, repo github.Repo, token, commit, branch string) error {
	env, err := github.GitAuthEnv(remoteURL, token, append(os.Environ(), s.opts.GitHub.GitEnv...))
	if err != nil {
		return err
	}
	g.Env = append(append(g.Env, s.opts.GitHub.GitEnv...), env...)
	_, err = g.Run(ctx, pushArgs(remoteURL, commit, branch)...)
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "could not read Username") || strings.Contains(msg, "Authentication failed") || strings.Contains(msg, "Invalid username or token"):
		return &apperr.Error{Kind: apperr.KindInvalid, Hint: github.TokenHint, Err: err,
			Message: fmt.Sprintf("GitHub refused paddock's token for a push to %s: it is wrong, expired or revoked", repo)}
	case strings.Contains(msg, "403") || strings.Contains(msg, "Permission to"):
		return &apperr.Error{Kind: apperr.KindInvalid, Hint: "give the token write access to " + repo.String() + "'s contents; " + github.TokenHint, Err: err,
			Message: fmt.Sprintf("GitHub forbade paddock's token to push to %s", repo)}
	}
	return fmt.Errorf("push the pull request's branch %s to %s: %w", branch, remoteURL, err)
}

// pushArgs is the push of commit to the remote's branch: no token in it, since a
// command line is anyone's to read (ps).
func pushArgs(remoteURL, commit, branch string) []string {
	return []string{"push", "--quiet", "--no-recurse-submodules", remoteURL, "+" + commit + ":refs/heads/" + branch}
}

// openPullOf is the open pull request of branch into base that GitHub already holds,
// or refused (GitHub's refusal to open another) when it has none.
func openPullOf(ctx context.Context, c *github.Client, repo github.Repo, branch, base string, refused error) (github.Pull, error) {
	ps, err := c.PullsOf(ctx, repo, branch)
	if err != nil {
		return github.Pull{}, err
	}
	for _, p := range ps {
		if p.State == "open" && p.Base.Ref == base {
			return p, nil
		}
	}
	return github.Pull{}, refused
}
