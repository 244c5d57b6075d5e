package cli_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/snapshot/storage"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestSnapshotFaults kills the daemon (kill -9) at random points of snapshots and of
// restores. After each: the store lists only whole snapshots (every blob of each is
// there, whole), the daemon comes back with its state, a restore cut short leaves either
// no sandbox or a whole one, and the same operation tried again succeeds. CI runs 5 of
// each; PADDOCK_SOAK_FAULTS=50 for the long run.
func TestSnapshotFaults(t *testing.T) {
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	runs := 5
	if v, err := strconv.Atoi(os.Getenv("PADDOCK_SOAK_FAULTS")); err == nil && v > 0 {
		runs = v
	}
	home, repo := e2eHome(t)
	paddock := newPaddock(t)
	must := mustSucceed(t, paddock)
	must("", "up", repo)
	must("", "exec", "repo", "--", "sh", "-c", "for i in $(seq 300); do head -c 20000 /dev/urandom > f$i.bin; done; echo kept > deliverables/kept.txt")
	must("", "chat", "repo", "--new", "w", "--agent", "shell", "--command", "sleep 100000")
	store, err := storage.NewDir(filepath.Join(home, "state", "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	kill := func() {
		data, err := os.ReadFile(filepath.Join(home, "state", "daemon.lock"))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		if pid <= 0 || syscall.Kill(pid, syscall.SIGKILL) != nil {
			return // no daemon running: the work ended first
		}
		for i := 0; i < 500; i++ {
			if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err != nil || len(fds) == 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("daemon %d did not die", pid)
	}
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
