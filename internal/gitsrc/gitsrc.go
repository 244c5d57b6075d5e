// Package gitsrc reads the repository a sandbox is made from: a clone of a git URL kept
// in paddock's cache, what its checkout is (commit, branch, origin, author), and the
// bundle of it that seeds the sandbox's /workspace. The CLI uses it on the user's
// machine; the daemon uses it for `up GIT-URL` through a context, where the clone is
// made on the daemon's host with that host's credentials.
package gitsrc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
)

// URL matches what git itself takes as a remote URL: scheme://... or user@host:path.
var URL = regexp.MustCompile(`^([a-z][a-z0-9+.-]*://|[^/@:\s]+@[^/:\s]+:)`)

// Source is what a repository's checkout is.
type Source struct {
	Commit, Branch, Origin, GitName, GitEmail string
	// Dirty are `git status --porcelain` lines (at most 20, then a count), the changes
	// that are not committed and so not in a sandbox made from it.
	Dirty []string
}

// Git runs git in dir with no terminal prompt and returns its output, trimmed. Like every
// host git command, it runs no hook, fsmonitor or external diff (gitsync.HostConfig).
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	return hostGit(ctx, dir, nil, args...)
}

// hostGit is Git with more config (-c pairs) before args.
func hostGit(ctx context.Context, dir string, config []string, args ...string) (string, error) {
	full := append(append(append([]string{"-C", dir}, gitsync.HostConfig()...), config...), args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// WithoutCredentials is a remote's URL without the secret it may carry: the user name
// and password of an http(s) URL (https://x-access-token:TOKEN@github.com/..., or a token
// as the user name), and the password of any other. What a sandbox is given as its
// origin goes through it: the host's tokens never enter a sandbox.
func WithoutCredentials(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.User == nil {
		return raw // a path, or scp-like user@host:path, which has no password
	}
	switch _, hasPassword := u.User.Password(); {
	case u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "ftp" || u.Scheme == "ftps":
		u.User = nil
	case hasPassword:
		u.User = url.User(u.User.Username())
	}
	return u.String()
}

// Describe reads repo's checkout.
func Describe(ctx context.Context, repo string) (Source, error) {
	var s Source
	var err error
	if s.Commit, err = Git(ctx, repo, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err != nil {
		return s, apperr.Invalid("commit something first (git commit), then run `paddock up` again",
			"the repository %s has no commits", repo)
	}
	s.Branch, _ = Git(ctx, repo, "symbolic-ref", "--short", "-q", "HEAD")
	s.Origin, _ = Git(ctx, repo, "remote", "get-url", "origin")
	s.GitName, _ = Git(ctx, repo, "config", "user.name")
	s.GitEmail, _ = Git(ctx, repo, "config", "user.email")
	// The user's filters stay off too, and the index is left as it is: reading what is
	// uncommitted runs nothing and writes nothing.
	status, err := hostGit(ctx, repo, gitsync.NoFilters(ctx, repo), "--no-optional-locks", "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return s, err
	}
	if status != "" {
		s.Dirty = strings.Split(status, "\n")
		if len(s.Dirty) > 20 {
			s.Dirty = append(s.Dirty[:20], fmt.Sprintf("... and %d more", len(s.Dirty)-20))
		}
	}
	return s, nil
}

// Bundle streams a bundle of repo's HEAD, every branch and every tag; wait reports how
// git ended, once the stream is read.
func Bundle(ctx context.Context, repo string) (bundle io.ReadCloser, wait func() error, err error) {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{"-C", repo}, gitsync.HostConfig()...), "bundle", "create", "-q", "-", "HEAD", "--branches", "--tags")...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("git bundle: %w", err)
	}
	wait = func() error {
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("git bundle: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
	return out, wait, nil
}

// CloneOptions say how Clone may reach a URL.
type CloneOptions struct {
	// Remote restricts the URL to the network transports (http(s), ssh, git, and
	// scp-like user@host:path), for a URL another machine sent: no file paths, no file://, no
	// ext:: or other remote helpers that would run commands or read the daemon's disk.
	Remote bool
	// Progress is told each step.
	Progress func(string)
}

// remoteProtocols are the git transports a URL from another machine may use.
const remoteProtocols = "http:https:ssh:git"

// CheckRemote refuses a URL that is not for a network transport (see CloneOptions.Remote).
func CheckRemote(url string) error {
	lower := strings.ToLower(url)
	for _, scheme := range []string{"https://", "http://", "ssh://", "git://", "git+ssh://", "ssh+git://"} {
		if strings.HasPrefix(lower, scheme) {
			return nil
		}
	}
	if !strings.Contains(url, "://") && URL.MatchString(url) && !strings.HasPrefix(url, "-") {
		return nil // user@host:path, ssh
	}
	return apperr.Invalid("give an https://, ssh:// or git@host:path URL",
		"%q is not a network git URL: the daemon clones only http(s), ssh and git URLs it is sent", url)
}

// Clone clones url into dir, or, when dir already holds a clone of url, fetches what is
// new into it (fast-forward only). A dir holding a clone of another URL is a conflict.
func Clone(ctx context.Context, url, dir string, opts CloneOptions) error {
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	if opts.Remote {
		if err := CheckRemote(url); err != nil {
			return err
		}
	}
	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	if opts.Remote {
		// Nobody is there to type a password: ssh fails rather than waits.
		env = append(env, "GIT_ALLOW_PROTOCOL="+remoteProtocols, "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	}
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", append(gitsync.HostConfig(), args...)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return apperr.Invalid("check the URL and that `git clone` of it works on this host",
				"cannot clone %s: %s", url, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if existing, err := Git(ctx, dir, "remote", "get-url", "origin"); err == nil {
		if existing != url && opts.Remote {
			// Another user's URL is not theirs to learn.
			return apperr.Conflict("choose another name with --name",
				"the daemon's clone for this name is of another repository")
		}
		if existing != url {
			return apperr.Conflict("choose another name with --name",
				"%s already holds a clone of %s, not %s", dir, existing, url)
		}
		progress(fmt.Sprintf("fetching %s into %s", url, dir))
		return run("-C", dir, "pull", "-q", "--ff-only")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	progress(fmt.Sprintf("cloning %s into %s", url, dir))
	if err := run("clone", "-q", "--", url, dir); err != nil {
		if rerr := os.RemoveAll(dir); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return errors.Join(err, rerr)
		}
		return err
	}
	return nil
}
