package cli_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/snapshot/storage"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestSnapshotFaults kills the daemon (kill -9) at random points of snapshots and of
// restores. After each: the store lists only whole snapshots (every blob of each is
// there, whole), the daemon comes back with its state, a restore cut short leaves either
// no sandbox or a whole one, and the same operation tried again succeeds. CI runs 5 of
// each; PADDOCK_SOAK_FAULTS=50 for the long run.
func TestSnapshotFaults(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	runs := 5
	if v, err := strconv.Atoi(os.Getenv("PADDOCK_SOAK_FAULTS")); err == nil && v > 0 {
		runs = v
	}
	h, repo := e2eHome(t)
	home := h.Dir
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo)
	must("", "exec", "repo", "--", "sh", "-c", "for i in $(seq 300); do head -c 20000 /dev/urandom > f$i.bin; done; echo kept > deliverables/kept.txt")
	must("", "chat", "repo", "--new", "w", "--agent", "shell", "--command", "sleep 100000")
	store, err := storage.NewDir(filepath.Join(home, "state", "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	kill := func() { killWait(t, clitest.DaemonPID(home)) }
	// whole checks every listed snapshot has every blob, whole.
	whole := func() int {
		var list []struct {
			ID  string
			Git struct {
				Bundles []struct {
					SHA256 string
					Size   int64
				}
			}
			Files []struct {
				Type, SHA256 string
				Size         int64
			}
		}
		if err := json.Unmarshal([]byte(must("", "snapshots", "--json")), &list); err != nil {
			t.Fatal(err)
		}
		for _, m := range list {
			check := func(sha string, size int64) {
				if got, err := store.Stat(t.Context(), storage.BlobKey(sha)); err != nil || got != size {
					t.Fatalf("snapshot %s is listed, but its blob %s is not whole: %d bytes of %d, %v", m.ID, sha, got, size, err)
				}
			}
			for _, b := range m.Git.Bundles {
				check(b.SHA256, b.Size)
			}
			for _, f := range m.Files {
				if f.Type == "f" {
					check(f.SHA256, f.Size)
				}
			}
		}
		return len(list)
	}
	for i := 0; i < runs; i++ {
		// A snapshot cut short, of work that changed since the last one.
		must("", "exec", "repo", "--", "sh", "-c", fmt.Sprintf("head -c 300000 /dev/urandom > change%d.bin", i))
		done := make(chan int, 1)
		go func() { _, _, code := paddock("", "snapshot", "repo"); done <- code }()
		time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
		kill()
		<-done
		before := whole()
		must("", "snapshot", "repo")
		if after := whole(); after != before+1 {
			t.Fatalf("run %d: a snapshot tried again after a crash made %d snapshots, not one", i, after-before)
		}

		// A restore cut short: no sandbox, or a whole one.
		name := fmt.Sprintf("r%d", i)
		go func() { _, _, code := paddock("", "restore", "repo", "--name", name); done <- code }()
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond)
		kill()
		<-done
		if _, _, code := paddock("", "exec", name, "--", "true"); code != 0 {
			must("", "restore", "repo", "--name", name) // none left behind: try again
		}
		if out := must("", "exec", name, "--", "sh", "-c", fmt.Sprintf("test -f f300.bin && test -f change%d.bin && cat deliverables/kept.txt", i)); out != "kept\n" {
			t.Fatalf("run %d: restored sandbox is not whole: %q", i, out)
		}
		must("", "rm", name, "--force")
	}
}

// TestCreateSyncFaults kills the daemon at random points of `up`, and the CLI at random
// points of `sync`. After a cut `up` there is no sandbox or a whole one, and `up` again
// works; after a cut sync each of the host's refs/paddock refs is as it was or as the
// sandbox has it, git finds the repository sound, and sync again brings everything.
func TestCreateSyncFaults(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	runs := 5
	if v, err := strconv.Atoi(os.Getenv("PADDOCK_SOAK_FAULTS")); err == nil && v > 0 {
		runs = v
	}
	h, repo := e2eHome(t)
	home := h.Dir
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	for i := 0; i < 200; i++ {
		os.WriteFile(filepath.Join(repo, fmt.Sprintf("f%03d.txt", i)), []byte(strings.Repeat("x", 5000)+fmt.Sprint(i)), 0o644)
	}
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "files"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	refs := func() map[string]string {
		out, err := exec.Command("git", "-C", repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/paddock/").Output()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if ref, sha, ok := strings.Cut(l, " "); ok {
				m[ref] = sha
			}
		}
		return m
	}

	for i := 0; i < runs; i++ {
		// up cut short.
		name := fmt.Sprintf("c%d", i)
		done := make(chan int, 1)
		go func() { _, _, code := paddock("", "up", repo, "--name", name); done <- code }()
		time.Sleep(time.Duration(rand.IntN(1200)) * time.Millisecond)
		killWait(t, clitest.DaemonPID(home))
		<-done
		if _, _, code := paddock("", "exec", name, "--", "true"); code != 0 {
			paddock("", "rm", name, "--force", "--purge") // a record the reconcile could not finish, if any
			must("", "up", repo, "--name", name)
		}
		if out := must("", "exec", name, "--", "sh", "-c", "ls f*.txt | wc -l"); strings.TrimSpace(out) != "200" {
			t.Fatalf("run %d: the sandbox made after a cut up is not whole: %q files", i, out)
		}

		// sync cut short, by killing the CLI (a process of its own here).
		must("", "exec", name, "--", "sh", "-c", fmt.Sprintf("echo %d >> f000.txt && git commit -q -am 'run %d' && echo wip > wip%d.txt", i, i, i))
		before := refs()
		cmd := exec.Command(os.Args[0], "sync", name)
		cmd.Args[0] = "paddock"
		cmd.Dir, cmd.Env = repo, h.Environ()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		// The git the CLI ran may still finish; wait for it to let go of the repository.
		waitUntil(t, 20*time.Second, "git to finish", func() bool {
			out, _ := exec.Command("sh", "-c", "pgrep -f '[g]it.*fetch.*fd::3/"+name+" ' | wc -l").Output()
			return strings.TrimSpace(string(out)) == "0"
		})
		if out, err := exec.Command("git", "-C", repo, "fsck", "--no-progress", "--connectivity-only").CombinedOutput(); err != nil {
			t.Fatalf("run %d: git fsck after a cut sync: %v %s", i, err, out)
		}
		mid := refs()
		must("", "sync", name)
		after := refs()
		for ref, sha := range mid {
			if old := before[ref]; old != sha && after[ref] != sha {
				t.Fatalf("run %d: %s is %s, neither as it was (%s) nor as the sandbox has it", i, ref, sha, old)
			}
		}
		ns := "refs/paddock/" + name + "/"
		if after[ns+"main"] == "" || after[ns+"main"] == before[ns+"main"] {
			t.Fatalf("run %d: sync again did not bring the new commit: %v", i, after)
		}
		must("", "rm", name, "--force", "--purge")
	}
}

// killWait kills a process with SIGKILL (none when pid is 0 or gone) and waits until it
// has let go of its files.
func killWait(t *testing.T, pid int) {
	t.Helper()
	if err := clitest.Kill(pid); err != nil {
		t.Fatal(err)
	}
}
