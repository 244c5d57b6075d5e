package gitsync

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Syncs of one sandbox into one repository take turns. Two at once (the daemon's
// automatic sync and `paddock sync`, or two terminals) would both fetch, and git would
// refuse the later one's ref updates ("cannot lock ref ...: is at X but expected Y"). A
// sync holds a lock on a file in the repository's git directory (.git/paddock/
// sync-SANDBOX.lock, left in place), which every process that syncs into it sees; the
// next one then finds the refs as the first left them.

// NoteWaitAfter is how long a sync waits for another in silence before it says so.
const NoteWaitAfter = time.Second

// syncLock waits, until ctx is done, for sandbox's sync lock in the repository, and
// returns its release.
func (g *Git) syncLock(ctx context.Context, sandbox string) (func(), error) {
	if sandbox == "" || strings.ContainsAny(sandbox, "/\x00") {
		return nil, fmt.Errorf("sync: %q is not a sandbox name", sandbox)
	}
	dir, err := commonDir(g.Repo)
	if err != nil {
		return nil, err
	}
	dir = filepath.Join(dir, "paddock")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sync lock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "sync-"+sandbox+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sync lock: %w", err)
	}
	wait := 5 * time.Millisecond
	waiting := time.Now()
	said := g.Notes == nil
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the file releases the lock
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("sync lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another sync of %s to end: %w", sandbox, ctx.Err())
		case <-time.After(wait):
			wait = min(2*wait, 100*time.Millisecond)
		}
		if !said && time.Since(waiting) >= NoteWaitAfter {
			fmt.Fprintf(g.Notes, "paddock: waiting for another sync of %s into %s to end (an automatic sync, or another terminal's)\n", sandbox, g.Repo)
			said = true
		}
	}
}

// commonDir is the git directory a repository's refs live in: top/.git, or, where .git
// is a file (a worktree, a submodule), the directory it names or that directory's
// commondir.
func commonDir(top string) (string, error) {
	dot := filepath.Join(top, ".git")
	fi, err := os.Stat(dot)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return dot, nil
	}
	b, err := os.ReadFile(dot)
	if err != nil {
		return "", err
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s names no git directory", dot)
	}
	if dir = strings.TrimSpace(dir); !filepath.IsAbs(dir) {
		dir = filepath.Join(top, dir)
	}
	if c, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		common := strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(dir, common)
		}
		dir = common
	}
	return dir, nil
}

// dropStaleRefLocks removes the ref locks a fetch into sandbox's namespace left when it
// was killed (a daemon stopped, a sync cancelled): git would refuse to update those refs
// again ("cannot lock ref ...: File exists"). Only a sync writes the namespace, under the
// sync lock: held, any lock found there is a dead fetch's. Symbolic links are not followed.
func (g *Git) dropStaleRefLocks(sandbox string) {
	dir, err := commonDir(g.Repo)
	if err != nil {
		return
	}
	ns := filepath.Join(dir, filepath.FromSlash(Namespace(sandbox)))
	filepath.WalkDir(ns, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".lock") {
			os.Remove(p)
		}
		return nil
	})
}
