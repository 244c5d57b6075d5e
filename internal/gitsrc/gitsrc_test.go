package gitsrc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCheckRemote: a URL another machine sends may name only a network transport, never
// a path on the daemon's disk or a remote helper that runs a command.
func TestCheckRemote(t *testing.T) {
	for _, url := range []string{"https://github.com/org/repo.git", "http://git.internal/repo", "ssh://git@host/repo",
		"git@github.com:org/repo.git", "git://host/repo", "me@build1:/srv/git/repo.git"} {
		if err := CheckRemote(url); err != nil {
			t.Errorf("%s refused: %v", url, err)
		}
	}
	for _, url := range []string{"/etc", "file:///etc", "ext::sh -c touch% /tmp/pwned", "fd::3", "./repo", "../x",
		"-uhello@x:y", "FILE:///etc", "testing::x", ""} {
		if err := CheckRemote(url); err == nil {
			t.Errorf("%q taken", url)
		}
	}
}

// TestCloneRemoteRefusesLocal: with Remote set, even a URL that slipped past the check
// cannot make git read a local path: GIT_ALLOW_PROTOCOL holds only network transports.
func TestCloneRemoteRefusesLocal(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", src).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	ctx := context.Background()
	if err := Clone(ctx, "file://"+src, filepath.Join(dir, "a"), CloneOptions{Remote: true}); err == nil {
		t.Fatal("a file:// URL was cloned")
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Fatalf("a refused clone left %s behind", filepath.Join(dir, "a"))
	}
	// The same clone, for the user on their own machine, works.
	if err := Clone(ctx, "file://"+src, filepath.Join(dir, "b"), CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	// A second clone of another URL into the same directory is a conflict, not a mix.
	if err := Clone(ctx, "file:///elsewhere", filepath.Join(dir, "b"), CloneOptions{}); err == nil {
		t.Fatal("a clone of another URL was taken into an existing clone")
	}
}

// TestWithoutCredentials: the URL a sandbox gets as its origin carries no token.
func TestWithoutCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"https://x-access-token:ghp_SECRET@github.com/o/r.git": "https://github.com/o/r.git",
		"https://ghp_SECRET@github.com/o/r":                    "https://github.com/o/r",
		"http://user:pw@git.example.com:8080/r":                "http://git.example.com:8080/r",
		"ssh://git:pw@github.com/o/r.git":                      "ssh://git@github.com/o/r.git",
		"ssh://git@github.com/o/r.git":                         "ssh://git@github.com/o/r.git",
		"git@github.com:o/r.git":                               "git@github.com:o/r.git",
		"https://github.com/o/r.git":                           "https://github.com/o/r.git",
		"/srv/git/r.git":                                       "/srv/git/r.git",
		"":                                                     "",
	} {
		if got := WithoutCredentials(in); got != want {
			t.Errorf("WithoutCredentials(%q) = %q, want %q", in, got, want)
		}
	}
}
