package gitsync

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHostGitIsHardened finds every place the programs start git on the host themselves
// and checks it is one that runs git hardened (HostConfig) or only reads config: a new
// exec of git elsewhere would honour the repository's hooks, fsmonitor and filters.
func TestHostGitIsHardened(t *testing.T) {
	t.Parallel()
	allowed := map[string]string{
		"internal/gitsync/git.go":           "the runner (command) and NoFilters, which reads config",
		"internal/gitsync/merge.go":         "definedDrivers reads config",
		"internal/gitsync/hostcode.go":      "userConfig reads config",
		"internal/gitsrc/gitsrc.go":         "every command takes HostConfig",
		"internal/testenv/testenv.go":       "tests' own repositories",
		"internal/clitest/clitest.go":       "the CLI tests' own repositories",
		"internal/github/githubtest/git.go": "the fake GitHub's own repositories and its tests' clones",
		"internal/hostgit/hostgit.go":       "paddock verify's scratch repositories, armed with traps on purpose",
	}
	execGit := regexp.MustCompile(`exec\.Command(Context)?\(([^,()]+, )?"git"`)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if execGit.Match(src) && allowed[rel] == "" {
			t.Errorf("%s starts host git itself: run it through gitsync.Git or gitsrc.Git, which turn hooks, fsmonitor and external diff off", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
