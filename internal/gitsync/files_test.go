package gitsync

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// refsByGit is what git itself lists under prefix, for comparison.
func refsByGit(t *testing.T, repo, prefix string) map[string]string {
	t.Helper()
	out := gitOut(t, repo, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
	refs := map[string]string{}
	for _, l := range lines(out) {
		name, id, _ := strings.Cut(l, " ")
		refs[name] = id
	}
	return refs
}

// TestRefsFromFiles: the namespace's refs read from the repository's files are the
// refs git lists, loose and packed, a loose ref over its packed value, deleted refs
// gone, other namespaces left out; and a repository git must read for itself is told.
func TestRefsFromFiles(t *testing.T) {
	t.Parallel()
	_, host, base := syncPair(t)
	ns := Namespace("s")
	g := &Git{Repo: host}
	check := func(what string) {
		t.Helper()
		got, ok := g.refsFromFiles(ns)
		if want := refsByGit(t, host, ns); !ok || !maps.Equal(got, want) {
			t.Errorf("%s: read %v (ok %v), git lists %v", what, got, ok, want)
		}
	}
	check("no refs yet")
	gitOut(t, host, "commit", "-q", "--allow-empty", "-m", "second")
	second := gitOut(t, host, "rev-parse", "HEAD")
	for _, ref := range []string{"main", "wip", "feature/deep/x", "gone"} {
		gitOut(t, host, "update-ref", ns+ref, base)
	}
	gitOut(t, host, "update-ref", "refs/paddock/s2/main", second)
	gitOut(t, host, "update-ref", "refs/paddock/s-other", second)
	check("loose")
	gitOut(t, host, "pack-refs", "--all")
	check("packed")
	gitOut(t, host, "update-ref", ns+"main", second)
	gitOut(t, host, "update-ref", "-d", ns+"gone")
	gitOut(t, host, "update-ref", ns+"new", second)
	check("loose over packed, one deleted, one new")
	if got, _ := g.refsFromFiles(ns); got[ns+"main"] != second || got[ns+"gone"] != "" || len(got) != 4 {
		t.Errorf("refs after the changes: %v", got)
	}
	// A lock file beside a ref is a write under way, not a ref.
	os.WriteFile(filepath.Join(host, ".git", "refs", "paddock", "s", "wip.lock"), []byte(second+"\n"), 0o644)
	check("a lock file")

	// A symbolic ref under the namespace: git reads it.
	gitOut(t, host, "symbolic-ref", ns+"sym", "refs/heads/main")
	if _, ok := g.refsFromFiles(ns); ok {
		t.Error("a symbolic ref in the namespace was read as files")
	}
	refs, err := g.Refs(context.Background(), ns)
	if want := refsByGit(t, host, ns); err != nil || !maps.Equal(refs, want) {
		t.Errorf("Refs with a symbolic ref: %v %v, want git's %v", refs, err, want)
	}

	// A worktree's .git is a file: git reads its refs.
	wt := filepath.Join(t.TempDir(), "wt")
	gitOut(t, host, "worktree", "add", "-q", "--detach", wt)
	if _, ok := (&Git{Repo: wt}).refsFromFiles(ns); ok {
		t.Error("a worktree's refs were read as files")
	}
	refs, err = (&Git{Repo: wt}).Refs(context.Background(), ns)
	if want := refsByGit(t, host, ns); err != nil || !maps.Equal(refs, want) {
		t.Errorf("Refs in a worktree: %v %v, want git's %v", refs, err, want)
	}
}

// TestHooksPathUnset: core.hooksPath is known unset without git only when no config git
// reads could set it; wherever it is set, or could be, git is asked and its answer is
// the one used.
func TestHooksPathUnset(t *testing.T) {
	t.Parallel()
	_, host, _ := syncPair(t)
	home := t.TempDir()
	// git's environment: a home of its own, and no XDG_CONFIG_HOME, GIT_CONFIG_* or GIT_DIR.
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	ctx := context.Background()
	if g := (&Git{Repo: host, Environ: env}); !g.hooksPathUnset() || g.hooksPath(ctx) != "" {
		t.Errorf("a plain repository: unset %v, hooksPath %q", g.hooksPathUnset(), g.hooksPath(ctx))
	}
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[remote \"x\"]\n\turl = https://example.com/include/hooksPath.git\n"), 0o644)
	if g := (&Git{Repo: host, Environ: env}); !g.hooksPathUnset() {
		t.Error("a URL holding the words include and hooksPath was taken for config that sets the key")
	}
	for _, tc := range []struct {
		what, file, text string
		env              [2]string
		want             string
	}{
		{"the repository's config", filepath.Join(host, ".git", "config"), "[core]\n\tHooksPath = ./.husky\n", [2]string{}, ".husky"},
		{"the user's config", filepath.Join(home, ".gitconfig"), "[CORE]\n\thookspath = hooks/\n", [2]string{}, "hooks/"},
		{"the user's XDG config", filepath.Join(home, ".config", "git", "config"), "[core]\nhooksPath=" + host + "/git-hooks\n", [2]string{}, "git-hooks"},
		{"on a section's line", filepath.Join(home, ".gitconfig"), "[core]hooksPath=on-line\n", [2]string{}, "on-line"},
		{"an included file", filepath.Join(home, ".gitconfig"), "[include]\n\tpath = " + filepath.Join(home, "more") + "\n", [2]string{}, "from-include"},
		{"the environment", "", "", [2]string{"GIT_CONFIG_COUNT", "1"}, "from-env"},
	} {
		os.Remove(filepath.Join(home, ".gitconfig"))
		os.RemoveAll(filepath.Join(home, ".config"))
		config, _ := os.ReadFile(filepath.Join(host, ".git", "config"))
		os.WriteFile(filepath.Join(home, "more"), []byte("[core]\n\thooksPath = from-include\n"), 0o644)
		if tc.file != "" {
			os.MkdirAll(filepath.Dir(tc.file), 0o755)
			f, _ := os.OpenFile(tc.file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			f.WriteString(tc.text)
			f.Close()
		}
		g := &Git{Repo: host, Environ: env}
		if tc.env[0] != "" {
			g.Environ = append(slices.Clip(env), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=from-env")
		}
		if g.hooksPathUnset() || g.hooksPath(ctx) != tc.want {
			t.Errorf("%s: unset %v, hooksPath %q, want %q", tc.what, g.hooksPathUnset(), g.hooksPath(ctx), tc.want)
		}
		os.WriteFile(filepath.Join(host, ".git", "config"), config, 0o644)
	}
}
