package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConcurrentSyncs: syncs of one sandbox started together (the daemon's automatic
// sync and `paddock sync`) all succeed, one of them bringing the new commit and the
// others finding nothing new, instead of git refusing their ref updates.
func TestConcurrentSyncs(t *testing.T) {
	t.Parallel()
	sb, hostDir, base, head := syncedThenCommitted(t)
	host := &Git{Repo: hostDir}
	ctx := context.Background()

	const n = 4
	var wg sync.WaitGroup
	results := make([]Result, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = host.Sync(ctx, "s", base, sb, localStream(sb, false))
		})
	}
	wg.Wait()
	brought := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("sync %d of %d at once: %v", i+1, n, errs[i])
		}
		if len(results[i].Updates) > 0 {
			brought++
			if u := results[i].Updates[0]; u.New != head || u.Old != base {
				t.Errorf("sync %d: %+v, want %s..%s", i+1, u, base, head)
			}
		}
	}
	if brought != 1 {
		t.Errorf("%d syncs brought the new commit, want one (the others find nothing new)", brought)
	}
	if got := gitOut(t, hostDir, "rev-parse", Namespace("s")+"main"); got != head {
		t.Errorf("the branch arrived at %s, want %s", got, head)
	}
}

// TestSyncLockWaits: a sync waits while another holds its sandbox's lock, a sync of
// another sandbox does not, and a wait ends with its context.
func TestSyncLockWaits(t *testing.T) {
	t.Parallel()
	_, hostDir, _ := syncPair(t)
	g := &Git{Repo: hostDir}
	ctx := context.Background()
	unlock, err := g.syncLock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	other, err := g.syncLock(ctx, "other")
	if err != nil {
		t.Fatalf("another sandbox's sync waited: %v", err)
	}
	other()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := g.syncLock(short, "s"); err == nil || !strings.Contains(err.Error(), "another sync of s") {
		t.Fatalf("a second sync of the sandbox while the first holds its lock: %v", err)
	}
	// A sync that waits says so, once, after a while; its Notes are its own.
	var notes lockedBuffer
	waiter := &Git{Repo: hostDir, Notes: &notes}
	got := make(chan error, 1)
	go func() {
		release, err := waiter.syncLock(ctx, "s")
		if err == nil {
			release()
		}
		got <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for notes.String() == "" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := notes.String(); !strings.Contains(n, "waiting for another sync of s into "+hostDir) || strings.Count(n, "\n") != 1 {
		t.Errorf("a waiting sync said %q, want it said once that it waits for another", n)
	}
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting sync did not get the lock once it was released")
	}
	if _, err := g.syncLock(ctx, "../s"); err == nil {
		t.Error("a name with a slash made a lock file")
	}
}

// TestCommonDir: the lock of a worktree's sync is the main repository's, where the refs
// are.
func TestCommonDir(t *testing.T) {
	t.Parallel()
	_, hostDir, _ := syncPair(t)
	wt := filepath.Join(t.TempDir(), "wt")
	gitOut(t, hostDir, "worktree", "add", "-q", wt)
	for _, top := range []string{hostDir, wt} {
		dir, err := commonDir(top)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(hostDir, ".git"); dir != want {
			t.Errorf("%s: git directory %s, want %s", top, dir, want)
		}
	}
}

// lockedBuffer is a strings.Builder safe to write and read from two goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSyncAfterAKilledFetch: a fetch killed mid-way (a daemon stopped during a landing)
// leaves the lock of the ref it was updating; the next sync of the sandbox brings the
// new commit all the same, instead of git refusing the ref ("cannot lock ref").
func TestSyncAfterAKilledFetch(t *testing.T) {
	t.Parallel()
	sb, hostDir, base, head := syncedThenCommitted(t)
	host := &Git{Repo: hostDir}
	ctx := context.Background()
	lock := filepath.Join(hostDir, ".git", filepath.FromSlash(Namespace("s")), "main.lock")
	if err := os.WriteFile(lock, []byte(base+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := host.Sync(ctx, "s", base, sb, localStream(sb, false)); err != nil {
		t.Fatalf("a sync after a fetch killed mid-way: %v", err)
	}
	if got := gitOut(t, hostDir, "rev-parse", Namespace("s")+"main"); got != head {
		t.Errorf("the branch is at %s, want %s", got, head)
	}
}

// syncedThenCommitted is a sandbox repository synced once into the host's, as sandbox
// "s", then given a new commit (head) on main.
func syncedThenCommitted(t *testing.T) (sb, hostDir, base, head string) {
	t.Helper()
	sb, hostDir, base = syncPair(t)
	if _, err := (&Git{Repo: hostDir}).Sync(context.Background(), "s", base, sb, localStream(sb, false)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sb, "b.txt"), []byte("b\n"), 0o644)
	gitOut(t, sb, "add", "b.txt")
	gitOut(t, sb, "commit", "-q", "-m", "add b")
	return sb, hostDir, base, gitOut(t, sb, "rev-parse", "HEAD")
}
