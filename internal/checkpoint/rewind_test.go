package checkpoint

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// gitIn runs git in dir and returns its output, trimmed.
func gitIn(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

// checkpointByHand records the workspace at dir as a checkpoint is stored: a commit of
// its whole tree (an index of its own, git add -A), whose parent holds the transcript
// at transcript as a blob.
func checkpointByHand(t *testing.T, dir, transcript string) wire.Checkpoint {
	t.Helper()
	index := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	gitIn(t, dir, index, "add", "-A", ".")
	tree := gitIn(t, dir, index, "write-tree")
	blob := gitIn(t, dir, nil, "hash-object", "-w", transcript)
	cmd := exec.Command("git", "mktree")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("100644 blob " + blob + "\ttranscript\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	parent := gitIn(t, dir, nil, "commit-tree", "-m", "conversation", strings.TrimSpace(string(out)))
	commit := gitIn(t, dir, nil, "commit-tree", "-p", parent, "-m", "checkpoint", tree)
	return wire.Checkpoint{Seq: 1, Kind: wire.CheckpointTurn, Turn: 1, Commit: commit,
		Head: gitIn(t, dir, nil, "rev-parse", "HEAD"), Branch: "main",
		Conversation: &wire.Conversation{Agent: "claude", Path: transcript, Blob: blob}}
}

// TestRestoreFiles: a checkpoint's files come back whatever the agent did after it
// (changed, deleted, new, a commit on the branch, another branch checked out), its
// uncommitted work shows uncommitted again, ignored files stay as they are, and a
// directory the agent swapped for a link to a directory outside the workspace comes
// back as a directory without a byte written through the link. The transcript comes
// back too, into a directory that is gone.
func TestRestoreFiles(t *testing.T) {
	testenv.Program(t, "git", "install git")
	c, _ := guesttest.Connect(t)
	dir := filepath.Join(t.TempDir(), "workspace")
	outside := filepath.Join(t.TempDir(), "outside")
	home := filepath.Join(t.TempDir(), "home")
	write(t, filepath.Join(outside, "precious"), "keep me\n")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, nil, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, ".gitignore"), "build/\n")
	write(t, filepath.Join(dir, "a.txt"), "a at the commit\n")
	write(t, filepath.Join(dir, "gone.txt"), "deleted later\n")
	write(t, filepath.Join(dir, "d", "one"), "one\n")
	write(t, filepath.Join(dir, "d", "two"), "two\n")
	gitIn(t, dir, nil, "add", "-A")
	gitIn(t, dir, nil, "commit", "-q", "-m", "first")
	// Uncommitted work at the checkpoint: a change, a new file; an ignored file.
	write(t, filepath.Join(dir, "a.txt"), "a changed at turn 1\n")
	write(t, filepath.Join(dir, "new.txt"), "untracked at turn 1\n")
	write(t, filepath.Join(dir, "build", "out"), "ignored, turn 1\n")
	transcript := filepath.Join(home, ".claude", "projects", "w", "id.jsonl")
	write(t, transcript, "{\"turn\":1}\n")
	cp := checkpointByHand(t, dir, transcript)

	// The agent goes on: commits, deletes, writes, swaps d for a link outside, moves
	// to another branch; the transcript grows, then its directory goes.
	gitIn(t, dir, nil, "commit", "-q", "-am", "turn 2")
	gitIn(t, dir, nil, "checkout", "-q", "-b", "other")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "new.txt"), "changed at turn 2\n")
	write(t, filepath.Join(dir, "later.txt"), "made at turn 2\n")
	write(t, filepath.Join(dir, "build", "out"), "ignored, turn 2\n")
	if err := os.RemoveAll(filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(transcript)); err != nil {
		t.Fatal(err)
	}

	files, err := restoreFilesIn(t.Context(), c, dir, cp, nil)
	if err != nil {
		t.Fatal(err)
	}
	// gone.txt and new.txt back, later.txt gone, the link d gone, d/one and d/two
	// back (a.txt was committed as it was): six paths.
	if files != 6 {
		t.Errorf("the rewind says it put back %d files, want 6", files)
	}
	for name, want := range map[string]string{
		"a.txt": "a changed at turn 1\n", "gone.txt": "deleted later\n", "new.txt": "untracked at turn 1\n",
		"d/one": "one\n", "d/two": "two\n", "build/out": "ignored, turn 2\n",
	} {
		if got := read(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s after the rewind: %q, want %q", name, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "later.txt")); !os.IsNotExist(err) {
		t.Errorf("later.txt, made after the checkpoint, is still there (%v)", err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "d")); err != nil || !fi.IsDir() {
		t.Errorf("d is not a directory again: %v %v", fi, err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 || read(t, filepath.Join(outside, "precious")) != "keep me\n" {
		t.Errorf("the directory outside the workspace was written through the link: %v", entries)
	}
	if b := gitIn(t, dir, nil, "symbolic-ref", "--short", "HEAD"); b != "main" {
		t.Errorf("HEAD is on %q, want main", b)
	}
	if h := gitIn(t, dir, nil, "rev-parse", "HEAD"); h != cp.Head {
		t.Errorf("main is at %s, want the checkpoint's %s (the commit after it undone)", h, cp.Head)
	}
	if st := gitIn(t, dir, nil, "status", "--porcelain"); st != "M a.txt\n?? new.txt" {
		t.Errorf("git status after the rewind:\n%s\nwant a.txt changed and new.txt untracked", st)
	}
	if _, err := os.Stat(gitIn(t, dir, nil, "rev-parse", "--absolute-git-dir") + "/paddock/rewind"); !os.IsNotExist(err) {
		t.Errorf("a finished rewind left its mark (%v)", err)
	}

	if err := restoreConversationIn(t.Context(), c, dir, cp); err != nil {
		t.Fatal(err)
	}
	if got := read(t, transcript); got != "{\"turn\":1}\n" {
		t.Errorf("the transcript after the rewind: %q", got)
	}
}

// TestRestoreCutOff: a rewind's file step cut off once it has begun (the daemon that
// asked for it gone: the guest kills the exec's processes) still runs to its end, so the
// workspace is the checkpoint's, never part way; its mark stays, naming the checkpoint
// and the undo point, for the rewind run again to read.
func TestRestoreCutOff(t *testing.T) {
	testenv.Program(t, "git", "install git")
	testenv.Program(t, "setsid", "install util-linux")
	c, _ := guesttest.Connect(t)
	dir := filepath.Join(t.TempDir(), "workspace")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, nil, "init", "-q", "-b", "main")
	gitIn(t, dir, nil, "commit", "-q", "--allow-empty", "-m", "first")
	const files = 1000
	for i := range files {
		write(t, filepath.Join(dir, "f", strconv.Itoa(i)), "a\n")
	}
	transcript := filepath.Join(t.TempDir(), "t.jsonl")
	write(t, transcript, "{}\n")
	cp := checkpointByHand(t, dir, transcript)
	for i := range files {
		write(t, filepath.Join(dir, "f", strconv.Itoa(i)), "b\n")
	}

	gitDir := gitIn(t, dir, nil, "rev-parse", "--absolute-git-dir")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := restoreFilesFor(ctx, c, dir, cp, 7, nil)
		done <- err
	}()
	// Cut it off once its own index is there: it has begun.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := os.Stat(filepath.Join(gitDir, "paddock", "rewind-index")); err == nil {
			break
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Log("the restore ended before it was cut off")
	}
	// It runs on to its end: every file back.
	back := func() (n int) {
		for i := range files {
			if read(t, filepath.Join(dir, "f", strconv.Itoa(i))) == "a\n" {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); back() != files; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a restore cut off left the workspace part way back: %d files of %d", back(), files)
		}
	}
	p, err := markRewind(t.Context(), c, dir, cp)
	if err != nil {
		t.Fatal(err)
	}
	if p.commit != cp.Commit || p.undo != 7 {
		t.Errorf("the mark of the rewind cut off says %+v, want commit %s and undo point 7", p, cp.Commit)
	}
}

// TestRestoreExcluded: paths [checkpoints] exclude names stay as they are through a
// rewind, even to a checkpoint taken before they were excluded, which holds them.
func TestRestoreExcluded(t *testing.T) {
	testenv.Program(t, "git", "install git")
	c, _ := guesttest.Connect(t)
	dir := filepath.Join(t.TempDir(), "workspace")
	write(t, filepath.Join(dir, "src.txt"), "src then\n")
	write(t, filepath.Join(dir, "data", "big.bin"), "data then\n")
	gitIn(t, dir, nil, "init", "-q", "-b", "main")
	gitIn(t, dir, nil, "commit", "-q", "--allow-empty", "-m", "first")
	transcript := filepath.Join(t.TempDir(), "t.jsonl")
	write(t, transcript, "{}\n")
	cp := checkpointByHand(t, dir, transcript)
	write(t, filepath.Join(dir, "src.txt"), "src now\n")
	write(t, filepath.Join(dir, "data", "big.bin"), "data now\n")
	write(t, filepath.Join(dir, "data", "new.bin"), "new data\n")

	files, err := restoreFilesIn(t.Context(), c, dir, cp, excludeSpecs([]string{"data/"}))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"src.txt": "src then\n", "data/big.bin": "data now\n", "data/new.bin": "new data\n"} {
		if got := read(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s after a rewind with data/ excluded: %q, want %q", name, got, want)
		}
	}
	if files != 1 {
		t.Errorf("the rewind says it put back %d files, want 1 (src.txt)", files)
	}
}
