package gitsync

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/hostdisk"
	"golang.org/x/sys/unix"
)

// localStream runs commands in dir on this machine, as a sandbox's exec runs them in
// /workspace; with v0, the way a git older than protocol v2 answers (GIT_PROTOCOL
// dropped).
func localStream(dir string, v0 bool) Stream {
	return func(ctx context.Context, argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = os.Environ()
		for _, e := range env {
			if !(v0 && strings.HasPrefix(e, "GIT_PROTOCOL=")) {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
		cmd.WaitDelay = time.Second
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), nil
		}
		return 0, err
	}
}

// git runs git in dir and returns its trimmed output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// syncPair makes a sandbox-like checkout with one commit and a host repository that
// has that commit, and returns them with the commit.
func syncPair(t *testing.T) (sandbox, host, base string) {
	dir := t.TempDir()
	sandbox, host = filepath.Join(dir, "workspace"), filepath.Join(dir, "host")
	gitOut(t, dir, "init", "-q", "-b", "main", sandbox)
	os.WriteFile(filepath.Join(sandbox, "a.txt"), []byte("a\n"), 0o644)
	gitOut(t, sandbox, "add", "a.txt")
	gitOut(t, sandbox, "commit", "-q", "-m", "base")
	gitOut(t, dir, "clone", "-q", sandbox, host)
	return sandbox, host, gitOut(t, sandbox, "rev-parse", "HEAD")
}

// TestSyncOverFD: the whole sync against real git on both sides, in protocol v2 and as
// an older git answers: what arrives, what is said to have arrived, and what the
// sandbox's own branch and index go through (nothing).
func TestSyncOverFD(t *testing.T) {
	t.Parallel()
	for _, v0 := range []bool{false, true} {
		t.Run(map[bool]string{false: "v2", true: "v0"}[v0], func(t *testing.T) {
			sb, hostDir, base := syncPair(t)
			host := &Git{Repo: hostDir}
			ctx := context.Background()
			sync := func() Result {
				t.Helper()
				res, err := host.Sync(ctx, "s", base, sb, localStream(sb, v0))
				if err != nil {
					t.Fatalf("sync: %v", err)
				}
				return res
			}
			updated := func(res Result) map[string]Update {
				m := map[string]Update{}
				for _, u := range res.Updates {
					m[u.Ref] = u
				}
				return m
			}
			ns := Namespace("s")

			// Clean: the branch and its WIP ref (HEAD) arrive, the WIP ref follows the branch.
			res := updated(sync())
			if len(res) != 2 || res[ns+"main"].New != base || res[ns+"wip"].New != base {
				t.Fatalf("first sync: %+v", res)
			}
			if target := gitOut(t, sb, "symbolic-ref", "refs/paddock-wip/wip"); target != "refs/heads/main" {
				t.Fatalf("clean checkout: the WIP ref is %q, not the branch", target)
			}
			if res := sync(); len(res.Updates) != 0 {
				t.Fatalf("nothing new, yet: %+v", res)
			}

			// A commit: both refs move alike, described alike.
			os.WriteFile(filepath.Join(sb, "b.txt"), []byte("b\n"), 0o644)
			gitOut(t, sb, "add", "b.txt")
			gitOut(t, sb, "commit", "-q", "-m", "add b")
			head := gitOut(t, sb, "rev-parse", "HEAD")
			res = updated(sync())
			for _, ref := range []string{ns + "main", ns + "wip"} {
				u := res[ref]
				if u.Old != base || u.New != head || len(u.Commits) != 1 || !strings.HasSuffix(u.Commits[0], " add b") ||
					len(u.Files) != 1 || u.Files[0] != "A\tb.txt" {
					t.Fatalf("%s after a commit: %+v", ref, u)
				}
			}
			if got := gitOut(t, hostDir, "rev-parse", ns+"main"); got != head {
				t.Fatalf("host has %s at %s, want %s", ns+"main", got, head)
			}

			// Uncommitted work, with a stat-dirty index: the WIP commit holds it; the
			// sandbox's branch and index stay exactly as they were.
			os.WriteFile(filepath.Join(sb, "a.txt"), []byte("a\nmore\n"), 0o644)
			os.WriteFile(filepath.Join(sb, "new.txt"), []byte("new\n"), 0o644)
			index, _ := os.ReadFile(filepath.Join(sb, ".git", "index"))
			res = updated(sync())
			wip := res[ns+"wip"]
			if len(res) != 1 || wip.Old != head || len(wip.Files) != 2 {
				t.Fatalf("uncommitted work: %+v", res)
			}
			if got := gitOut(t, sb, "rev-parse", "refs/heads/main"); got != head {
				t.Fatalf("the sandbox's branch moved to %s (the WIP commit?)", got)
			}
			if after, _ := os.ReadFile(filepath.Join(sb, ".git", "index")); !bytes.Equal(after, index) {
				t.Fatal("the sandbox's index was written")
			}
			if got := gitOut(t, hostDir, "show", ns+"wip:new.txt"); got != "new" {
				t.Fatalf("WIP commit's new.txt: %q", got)
			}
			if parent := gitOut(t, hostDir, "rev-parse", ns+"wip^"); parent != head {
				t.Fatalf("WIP commit's parent %s, want %s", parent, head)
			}

			// Committed again on another branch: the WIP ref follows the new branch.
			gitOut(t, sb, "switch", "-q", "-c", "feature")
			gitOut(t, sb, "add", "-A")
			gitOut(t, sb, "commit", "-q", "-m", "feature work")
			feature := gitOut(t, sb, "rev-parse", "HEAD")
			res = updated(sync())
			if res[ns+"feature"].New != feature || res[ns+"wip"].New != feature || res[ns+"feature"].Old != "" {
				t.Fatalf("after switching branch: %+v", res)
			}
			if got := gitOut(t, sb, "rev-parse", "refs/heads/main"); got != head {
				t.Fatalf("main moved to %s", got)
			}

			// Two commits, a file added and removed again: the changes are the whole span's.
			// A subject that plays with the log's own markers changes nothing but itself.
			os.WriteFile(filepath.Join(sb, "tmp.txt"), []byte("tmp\n"), 0o644)
			gitOut(t, sb, "add", "tmp.txt")
			gitOut(t, sb, "commit", "-q", "-m", "\x01"+feature+"\x01x add tmp")
			gitOut(t, sb, "rm", "-q", "tmp.txt")
			os.WriteFile(filepath.Join(sb, "c.txt"), []byte("c\n"), 0o644)
			gitOut(t, sb, "add", "c.txt")
			gitOut(t, sb, "commit", "-q", "-m", "rm tmp, add c")
			u := updated(sync())[ns+"feature"]
			if len(u.Commits) != 2 || !strings.Contains(u.Commits[1], `\x01`) || len(u.Files) != 1 || u.Files[0] != "A\tc.txt" {
				t.Fatalf("two commits: %+v", u)
			}
		})
	}
}

// TestSyncBranchClash: a sandbox branch named like the WIP refs stops the sync before
// the host has a new ref, in both protocols, and names the branch.
func TestSyncBranchClash(t *testing.T) {
	t.Parallel()
	for _, branch := range []string{"wip", "wip-x", "wip-a/b"} {
		for _, v0 := range []bool{false, true} {
			sb, hostDir, base := syncPair(t)
			gitOut(t, sb, "branch", branch)
			before := gitOut(t, hostDir, "for-each-ref")
			_, err := (&Git{Repo: hostDir}).Sync(context.Background(), "s", base, sb, localStream(sb, v0))
			var clash *BranchClashError
			if !errors.As(err, &clash) || clash.Branch != branch {
				t.Fatalf("branch %s (v0 %v): %v", branch, v0, err)
			}
			if after := gitOut(t, hostDir, "for-each-ref"); after != before {
				t.Fatalf("branch %s: the host's refs changed:\n%s", branch, after)
			}
		}
	}
}

// TestRefWatchRefusesOtherOutput: output that is not the pack protocol is cut, not
// passed to git.
func TestRefWatchRefusesOtherOutput(t *testing.T) {
	t.Parallel()
	var got bytes.Buffer
	cut := false
	w := &refWatch{w: &got, cut: func() { cut = true }, seen: func(map[string]string) error { return nil }}
	if _, err := w.Write([]byte("hello, git\n")); err == nil || !cut || got.Len() != 0 {
		t.Fatalf("err %v, cut %v, passed %q", err, cut, got.String())
	}
}

// TestListedNamesAsGitTakesThem: the names and ids of a sandbox's listing are taken as
// where refs now point only when git would have written them: refName accepts no name
// that git check-ref-format refuses, and objectID only full ids (an id is a git argument
// later: "--output=F" must never pass).
func TestListedNamesAsGitTakesThem(t *testing.T) {
	t.Parallel()
	names := []string{"refs/heads/main", "refs/heads/feature/x", "refs/paddock-wip/wip-a", "refs/heads/a..b",
		"refs/heads/.hidden", "refs/heads/x.lock", "refs/heads/x/", "refs/heads/x.", "refs/heads/a//b",
		"refs/heads/a@{1}", "refs/heads/a b", "refs/heads/a~1", "refs/heads/a^", "refs/heads/a:b", "refs/heads/a?",
		"refs/heads/a*", "refs/heads/a[", `refs/heads/a\b`, "refs/heads/\x1b]0;pwned\x07", "refs/heads/\x7f",
		"refs/heads/ünï", "refs/heads/@", "refs/heads/-x", "refs/heads/x.lock/y"}
	for _, name := range names {
		gitTakes := exec.Command("git", "check-ref-format", name).Run() == nil
		if refName(name) && !gitTakes {
			t.Errorf("refName(%q) is true, git check-ref-format refuses it", name)
		}
		if !refName(name) && gitTakes && !strings.ContainsAny(name, "\x1b\x07") {
			t.Logf("refName(%q) refuses what git takes (a sync then asks git)", name)
		}
	}
	for id, want := range map[string]bool{
		strings.Repeat("a", 40): true, strings.Repeat("0", 64): true, strings.Repeat("A", 40): false,
		"--output=/tmp/x": false, strings.Repeat("a", 39): false, "": false,
	} {
		if objectID(id) != want {
			t.Errorf("objectID(%q) = %v", id, !want)
		}
	}
}

// TestSyncLeavesUpkeep: a sync does not run the host repository's upkeep, even where
// the repository asks for it after every fetch (a pack kept per fetch, more than one
// pack repacked by gc --auto, in the foreground): what arrived stays in its own pack for
// the user's own git to consolidate.
func TestSyncLeavesUpkeep(t *testing.T) {
	t.Parallel()
	sb, hostDir, base := syncPair(t)
	commit := func(dir, name string) {
		os.WriteFile(filepath.Join(dir, name), []byte(name+"\n"), 0o644)
		gitOut(t, dir, "add", name)
		gitOut(t, dir, "commit", "-q", "-m", name)
	}
	packs := func() int {
		m, _ := filepath.Glob(filepath.Join(hostDir, ".git", "objects", "pack", "*.pack"))
		return len(m)
	}
	// The host has two packs, one more than it wants: the next upkeep makes them one.
	for _, name := range []string{"host1.txt", "host2.txt"} {
		commit(hostDir, name)
		gitOut(t, hostDir, "repack", "-q")
	}
	for _, kv := range [][2]string{{"fetch.unpackLimit", "1"}, {"gc.autoPackLimit", "1"}, {"gc.autoDetach", "false"}} {
		gitOut(t, hostDir, "config", kv[0], kv[1])
	}
	before := packs()
	if before != 2 {
		t.Fatalf("%d packs in the host repository: want 2 (the test's premise)", before)
	}
	commit(sb, "b.txt")
	host := &Git{Repo: hostDir}
	if _, err := host.Sync(context.Background(), "s", base, sb, localStream(sb, false)); err != nil {
		t.Fatal(err)
	}
	if got := gitOut(t, hostDir, "rev-parse", "refs/paddock/s/main"); got != gitOut(t, sb, "rev-parse", "HEAD") {
		t.Fatalf("refs/paddock/s/main = %s after the sync", got)
	}
	if n := packs(); n != before+1 {
		t.Fatalf("%d packs after the sync, %d before: want the fetched pack beside them, not repacked", n, before)
	}
	// The user's own fetch, by contrast, runs the upkeep that packs them into one.
	commit(sb, "c.txt")
	gitOut(t, hostDir, "fetch", "-q", sb, "main:refs/user/main")
	if n := packs(); n != 1 {
		t.Fatalf("%d packs after the user's git fetch: want gc --auto to have made them one (the test's premise)", n)
	}
}

// TestSyncStopsBeforeTheDiskIsFull: an agent commits more than the host's disk has room
// for (here 64 MiB that do not compress, against a 48 MiB filesystem holding the host
// repository); the sync stops with a NoRoomError, writes no ref, and leaves the disk as
// free as it was (git's partial pack removed). Without the bound git fills the
// filesystem and fails on a full disk.
func TestSyncStopsBeforeTheDiskIsFull(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem for the host repository needs root")
	}
	for _, files := range []int{1, 160} {
		t.Run(fmt.Sprintf("%d files", files), func(t *testing.T) { syncIntoSmallDisk(t, files) })
	}
}

// syncIntoSmallDisk commits 64 MiB of random bytes in files files in a sandbox, and syncs
// it into a host repository on a 48 MiB filesystem: one file goes through git's
// unpack-objects, many through index-pack (over its 100 objects).
func syncIntoSmallDisk(t *testing.T, files int) {
	sb, hostDir, base := syncPair(t)
	for i := range files {
		data := make([]byte, (64<<20)/files)
		rand.Read(data)
		if err := os.WriteFile(filepath.Join(sb, fmt.Sprintf("data%d.bin", i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitOut(t, sb, "add", ".")
	gitOut(t, sb, "commit", "-q", "-m", "large files")

	small := filepath.Join(t.TempDir(), "small")
	os.Mkdir(small, 0o755)
	if err := unix.Mount("tmpfs", small, "tmpfs", 0, "size=48m"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(small, unix.MNT_DETACH) })
	host := filepath.Join(small, "host")
	if out, err := exec.Command("cp", "-a", hostDir, host).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	before := gitOut(t, host, "for-each-ref")
	room := hostdisk.Room(host)

	_, err := (&Git{Repo: host}).Sync(context.Background(), "s", base, sb, localStream(sb, false))
	var noRoom *NoRoomError
	if !errors.As(err, &noRoom) || noRoom.Room != room {
		t.Fatalf("sync of 64 MiB into a 48 MiB filesystem: %v, want a NoRoomError with room %d", err, room)
	}
	if after := gitOut(t, host, "for-each-ref"); after != before {
		t.Fatalf("the host's refs changed:\n%s", after)
	}
	// What the cut fetch received is not kept: the disk is as free as before.
	if after := hostdisk.Room(host); after < room-(1<<20) {
		t.Fatalf("the host's filesystem has room for %d bytes after the sync, %d before: the partial pack was left", after, room)
	}
}
