package gitsync

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// A sync says what is new since the last sync, not since whatever last wrote the
// sandbox's refs: `paddock diff` fetches into the same refs/paddock/SANDBOX/* (and so may
// a plain `git fetch paddock::SANDBOX` into them), and a sync after it must still report
// the commits and the uncommitted work it brought. So each sync keeps where it left the
// refs it reported, in a file beside its lock (.git/paddock/synced-SANDBOX, "ID REF" a
// line), and the next compares the refs it fetches with that, not with the refs it
// found. Only a sync writes the file, under the sync lock.
//
// With no file yet (a repository synced by an older paddock, or never), the refs as they
// stand before the fetch count as reported, as they always did: the first reader to take
// the lock writes that down, so a diff before the first sync leaves the news of what it
// fetched to that sync. A ref the record names that is no longer in the repository (the
// user deleted it) counts as never reported.

// reportedPath is the file that records sandbox's last reported refs.
func (g *Git) reportedPath(sandbox string) (string, error) {
	dir, err := commonDir(g.Repo)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "paddock", "synced-"+sandbox), nil
}

// reported reads the refs the last sync of sandbox reported; ok is false when there is
// no record (or it cannot be read: then the refs found count, as with none).
func (g *Git) reported(sandbox string) (refs map[string]string, ok bool) {
	p, err := g.reportedPath(sandbox)
	if err != nil {
		return nil, false
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	refs = map[string]string{}
	ns := Namespace(sandbox)
	for _, l := range strings.Split(string(data), "\n") {
		id, ref, found := strings.Cut(l, " ")
		if found && objectID(id) && strings.HasPrefix(ref, ns) && refName(ref) {
			refs[ref] = id
		}
	}
	return refs, true
}

// since is what a sync compares the fetched refs with: the last reported value of each
// ref found before the fetch, or the refs found when nothing was recorded.
func (g *Git) since(sandbox string, found map[string]string) (before map[string]string, recorded bool) {
	rec, ok := g.reported(sandbox)
	if !ok {
		return found, false
	}
	before = map[string]string{}
	for ref := range found {
		if id, ok := rec[ref]; ok {
			before[ref] = id
		}
	}
	return before, true
}

// report records refs as the last reported refs of sandbox.
func (g *Git) report(sandbox string, refs map[string]string) error {
	p, err := g.reportedPath(sandbox)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(refs))
	for ref := range refs {
		names = append(names, ref)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, ref := range names {
		fmt.Fprintf(&b, "%s %s\n", refs[ref], ref)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("record the sync: %w", err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("record the sync: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("record the sync: %w", err)
	}
	return nil
}

// reportedOnce records refs as reported when nothing is recorded yet (a reader that is
// not a sync, about to move the refs: see above).
func (g *Git) reportedOnce(sandbox string, refs map[string]string) error {
	p, err := g.reportedPath(sandbox)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return g.report(sandbox, refs)
}
