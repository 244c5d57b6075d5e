package gitsync

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// recordIn runs WIPScript in dir as a sandbox runs it and returns the WIP ref's commit,
// or the script's output when it fails.
func recordIn(dir string) (commit, failure string) {
	cmd := exec.Command("sh", "-c", WIPScript, "sh", WIPBranch)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), SandboxGitEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("%v: %s", err, out)
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "refs/paddock-wip/"+WIPBranch).CombinedOutput()
	if err != nil {
		return "", fmt.Sprintf("%v: %s", err, out)
	}
	return strings.TrimSpace(string(out)), ""
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}

// TestWIPAfterKilledRecording: a recording killed while git held the WIP ref's lock
// leaves the lock behind; the next recording still records, and recordings that run at
// once all succeed with the same commit.
func TestWIPAfterKilledRecording(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock (util-linux) is not installed")
	}
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	gitIn(t, dir, "add", "a.txt")
	gitIn(t, dir, "commit", "-q", "-m", "a")
	os.WriteFile(filepath.Join(dir, "work.txt"), []byte("uncommitted\n"), 0o644)

	lock := filepath.Join(dir, ".git", "refs", "paddock-wip", WIPBranch+".lock")
	os.MkdirAll(filepath.Dir(lock), 0o755)
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	first, failure := recordIn(dir)
	if failure != "" {
		t.Fatalf("recording after a killed one: %s", failure)
	}
	if out, _ := exec.Command("git", "-C", dir, "show", first+":work.txt").Output(); string(out) != "uncommitted\n" {
		t.Fatalf("the WIP commit does not hold the uncommitted file: %q", out)
	}

	os.WriteFile(filepath.Join(dir, "work.txt"), []byte("more\n"), 0o644)
	var wg sync.WaitGroup
	got := make([]string, 4)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, failure := recordIn(dir)
			if failure != "" {
				t.Errorf("recording %d of 4 at once: %s", i, failure)
			}
			got[i] = c
		}()
	}
	wg.Wait()
	for _, c := range got[1:] {
		if c != got[0] || c == first {
			t.Fatalf("recordings at once gave %v (before: %s)", got, first)
		}
	}
}
