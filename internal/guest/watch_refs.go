package guest

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// The branch watcher reports branches of the workspace's repository that move (for the
// on-commit sync mode). It looks every pollInterval instead of keeping inotify watches:
// the repository does not exist yet when the guest starts (the daemon seeds it after),
// and branch names with slashes nest directories under refs/heads that come and go. A
// look stats the few entries under refs/heads and packed-refs; the refs are read only
// when one of those changed.

// refsLimit bounds how many branches the watcher follows.
const refsLimit = 10000

// refState is what the branch watcher knows between two looks.
type refState struct {
	fingerprint string
	heads       map[string]string // branch → commit
	baseline    bool
}

// scanRefs reports each branch of the repository at workspace that was created, moved or
// deleted since the last look.
func (st *refState) scanRefs(workspace string, emit func(*guestpb.Event)) {
	gitDir := filepath.Join(workspace, ".git")
	fp := refsFingerprint(gitDir)
	if st.baseline && fp == st.fingerprint {
		return
	}
	st.fingerprint = fp
	heads := readHeads(gitDir)
	if !st.baseline {
		st.baseline, st.heads = true, heads
		return
	}
	for branch, commit := range heads {
		if old := st.heads[branch]; old != commit {
			emit(newEvent(guestproto.EventBranchMoved, map[string]string{"branch": branch, "from": old, "to": commit}))
		}
	}
	for branch, old := range st.heads {
		if _, ok := heads[branch]; !ok {
			emit(newEvent(guestproto.EventBranchMoved, map[string]string{"branch": branch, "from": old, "to": ""}))
		}
	}
	st.heads = heads
}

// refsFingerprint sums up what changes when a branch moves: the entries under refs/heads
// (git renames a lock file over a ref) and packed-refs.
func refsFingerprint(gitDir string) string {
	var b strings.Builder
	if fi, err := os.Stat(filepath.Join(gitDir, "packed-refs")); err == nil {
		fmt.Fprintf(&b, "packed %d %d\n", fi.Size(), fi.ModTime().UnixNano())
	}
	n := 0
	root := filepath.Join(gitDir, "refs", "heads")
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > refsLimit {
			return filepath.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		fmt.Fprintf(&b, "%s %d %d\n", path, fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	return b.String()
}

// readHeads reads every branch: loose refs, and packed ones that have none.
func readHeads(gitDir string) map[string]string {
	heads := map[string]string{}
	if data, err := readSmallFile(filepath.Join(gitDir, "packed-refs"), 64<<20); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() && len(heads) < refsLimit {
			commit, ref, ok := strings.Cut(sc.Text(), " ")
			if branch, isHead := strings.CutPrefix(ref, "refs/heads/"); ok && isHead && isObjectID(commit) {
				heads[branch] = commit
			}
		}
	}
	root := filepath.Join(gitDir, "refs", "heads")
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() || strings.HasSuffix(path, ".lock") {
			return nil
		}
		if len(heads) >= refsLimit {
			return filepath.SkipAll
		}
		data, err := readSmallFile(path, 128)
		if commit := strings.TrimSpace(string(data)); err == nil && isObjectID(commit) {
			rel, _ := filepath.Rel(root, path)
			heads[filepath.ToSlash(rel)] = commit
		}
		return nil
	})
	return heads
}

// isObjectID reports whether s looks like a SHA-1 or SHA-256 object name.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
