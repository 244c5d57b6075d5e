package gitsync

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

// committedRepo is a repository with one commit, of a.txt.
func committedRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	gitIn(t, dir, "add", "a.txt")
	gitIn(t, dir, "commit", "-q", "-m", "a")
	return dir
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
	t.Parallel()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock (util-linux) is not installed")
	}
	dir := committedRepo(t)
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

// TestWIPLeavesBigFilesUnread: with PADDOCK_WIP_MAX_BYTES (a snapshot's max_file_mb), a
// new file over it is left out of the WIP commit without git reading it: a sparse file of
// 64 GiB would cost git minutes to hash, and its object would be written into the
// sandbox's repository. A tracked file grown over it (truncate -s 64G) keeps its
// committed version, unread. Files under the bound, odd names included, go in.
func TestWIPLeavesBigFilesUnread(t *testing.T) {
	t.Parallel()
	dir := committedRepo(t)
	os.WriteFile(filepath.Join(dir, "small *[x].txt"), []byte("small\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "data"), 0o755)
	for _, name := range []string{filepath.Join("data", "huge.img"), "a.txt"} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(64 << 30); err != nil {
			t.Skipf("no sparse file of 64 GiB here: %v", err)
		}
		f.Close()
	}

	cmd := exec.Command("sh", "-c", WIPRules+"set -e\n"+WIPIndex+"git write-tree\n")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(SandboxGitEnv, "PADDOCK_WIP_MAX_BYTES=1048576")...)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("the WIP index still running after a minute: git is reading the sparse file")
	}
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || lines[0] != "big data/huge.img" || lines[1] != "big a.txt" {
		t.Fatalf("output %q, want the big files named, then the tree", out)
	}
	ls, _ := exec.Command("git", "-C", dir, "ls-tree", "-r", "--name-only", lines[2]).Output()
	if got := string(ls); got != "a.txt\nsmall *[x].txt\n" {
		t.Fatalf("the WIP tree holds %q", got)
	}
	if a, _ := exec.Command("git", "-C", dir, "show", lines[2]+":a.txt").Output(); string(a) != "a\n" {
		t.Fatalf("the grown tracked file is %d bytes in the WIP tree, want its committed version", len(a))
	}
}
