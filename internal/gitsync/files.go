package gitsync

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A sync is mostly process starts, and two of the host's git commands only read what a
// repository keeps in plain files: its refs under the sandbox's namespace, and whether
// core.hooksPath is set. For a repository laid out the usual way, both are read here,
// with no process; for any other (a worktree, the reftable store, config that includes
// other files), git is asked.

// refsFromFiles reads the refs under prefix ("refs/paddock/NAME/") from git's files ref
// store: loose ref files, which win, over the entries of packed-refs. ok is false when
// the repository keeps its refs otherwise, or holds something under prefix that is not a
// plain ref (a symbolic ref, a symlink, a file git would not read as an object id): then
// git reads them.
func (g *Git) refsFromFiles(prefix string) (refs map[string]string, ok bool) {
	dir, ok := g.gitDir()
	if !ok {
		return nil, false
	}
	if _, err := os.Lstat(filepath.Join(dir, "reftable")); !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	// Loose refs first, then packed-refs for the names they lack: git pack-refs writes
	// the new packed-refs before it removes the loose files it packed, so a ref being
	// packed meanwhile is found in one or the other.
	refs = map[string]string{}
	root := filepath.Join(dir, filepath.FromSlash(prefix))
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // no ref there yet, or one git removed as it packed it (packed-refs has it)
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case strings.HasSuffix(p, ".lock"):
			return nil // a write under way; git reads the ref beside it
		case !d.Type().IsRegular():
			return errors.New("not a plain ref")
		}
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed as git packed it: packed-refs, read next, has it
		}
		if err != nil {
			return err
		}
		id := strings.TrimSuffix(string(data), "\n")
		if !objectID(id) {
			return errors.New("not a plain ref")
		}
		rel, _ := filepath.Rel(dir, p)
		refs[filepath.ToSlash(rel)] = id
		return nil
	})
	if err != nil {
		return nil, false
	}
	packed, err := os.ReadFile(filepath.Join(dir, "packed-refs"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	lines := bufio.NewScanner(bytes.NewReader(packed))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		id, name, found := strings.Cut(lines.Text(), " ")
		if !found || !strings.HasPrefix(name, prefix) {
			continue // the header, a peeled line (^ID), another ref
		}
		if !objectID(id) {
			return nil, false
		}
		if _, loose := refs[name]; !loose {
			refs[name] = id
		}
	}
	if lines.Err() != nil {
		return nil, false
	}
	return refs, true
}

// hooksPathUnset says that core.hooksPath is surely not set for the repository, without
// asking git: no variable sets config, and no config file git reads for it (its own, the
// user's) names the key or includes another file. false means only that git must say.
func (g *Git) hooksPathUnset() bool {
	for _, v := range []string{"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_DIR", "GIT_COMMON_DIR"} {
		if g.getenv(v) != "" {
			return false
		}
	}
	dir, ok := g.gitDir()
	if !ok {
		return false
	}
	files := []string{filepath.Join(dir, "config"), filepath.Join(dir, "config.worktree")}
	if home := g.homeDir(); home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config"))
	}
	if xdg := g.getenv("XDG_CONFIG_HOME"); xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || mayNameKey(data, "hookspath") || mayOpenSection(data, "include") {
			return false
		}
	}
	return true
}

// mayNameKey says whether config text may set key (lower case): whether the word
// appears where a key's name starts, at a line's start or after a section's header on
// the same line. Names are case-insensitive and cannot be split; a value that merely
// holds the word (a path, a URL) does not count unless space comes before it.
func mayNameKey(text []byte, key string) bool {
	return anyPlace(text, key, func(before []byte) bool {
		return len(before) == 0 || strings.IndexByte(" \t\n\r]", before[len(before)-1]) >= 0
	})
}

// mayOpenSection says whether config text may hold a section whose name starts with
// name (lower case): "[include]", "[includeIf ...]".
func mayOpenSection(text []byte, name string) bool {
	return anyPlace(text, name, func(before []byte) bool {
		before = bytes.TrimRight(before, " \t")
		return len(before) > 0 && before[len(before)-1] == '['
	})
}

// anyPlace says whether word appears in text, case-insensitively, anywhere ok says of
// the text before it.
func anyPlace(text []byte, word string, ok func(before []byte) bool) bool {
	text = bytes.ToLower(text)
	for from := 0; ; {
		i := bytes.Index(text[from:], []byte(word))
		if i < 0 {
			return false
		}
		if ok(text[:from+i]) {
			return true
		}
		from += i + 1
	}
}

// gitDir is the repository's .git, when it is a directory of its own (not a worktree's
// .git file, not a link).
func (g *Git) gitDir() (string, bool) {
	dir := filepath.Join(g.Repo, ".git")
	fi, err := os.Lstat(dir)
	return dir, err == nil && fi.IsDir()
}
