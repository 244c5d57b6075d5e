package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/archive"
	"github.com/paddockhq/paddock/internal/hostdisk"
	"github.com/paddockhq/paddock/internal/hostfs"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/termtext"
)

// syncFiles copies /workspace paths out into the same paths of the host repository. It
// unpacks everything into a staging directory first, checks what arrived and which host
// entries it would replace, and only then moves the files into place: a refusal leaves
// the host repository untouched.
//
// Everything the sandbox sent is untrusted. Every host path is resolved beneath the
// repository without following a symlink (hostfs): a link the sandbox placed on an
// earlier sync is kept as a link and never written through, and nothing lands in .git
// or outside what was asked for.
func syncFiles(ctx context.Context, f *Factory, c *client.Client, name string, opts *syncOptions) error {
	var rels []string
	for _, p := range opts.files {
		rel := path.Clean(strings.TrimPrefix(strings.TrimPrefix(p, inside.Workspace), "/"))
		if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return usagef("--files takes paths inside /workspace, got %q", p)
		}
		if inGitDir(rel) {
			return usagef("--files does not copy into .git (%q): the agent's commits come with `paddock sync`", p)
		}
		rels = append(rels, rel)
	}
	info, err := c.Get(ctx, name)
	if err != nil {
		return err
	}
	g, err := hostRepo(ctx, f, info)
	if err != nil {
		return err
	}
	repo, err := hostfs.Open(g.Repo)
	if err != nil {
		return err
	}
	defer repo.Close()
	stagingPath, err := os.MkdirTemp(g.Repo, ".paddock-files-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stagingPath)
	staging, err := hostfs.Open(stagingPath)
	if err != nil {
		return err
	}
	defer staging.Close()

	var total archive.Stats
	room := hostdisk.Room(stagingPath)
	for _, rel := range rels {
		body, err := c.TarOutBeneath(ctx, name, inside.Workspace, inside.Workspace+"/"+rel)
		if err != nil {
			return err
		}
		dir := path.Dir(rel)
		if err := staging.MkdirAll(dir, 0o755); err != nil {
			body.Close()
			return err
		}
		var opts archive.Options
		if room > 0 {
			opts.MaxBytes = max(room-total.Bytes, 1)
		}
		st, err := archive.Unpack(body, filepath.Join(stagingPath, filepath.FromSlash(dir)), opts)
		body.Close()
		if err != nil {
			return fmt.Errorf("copy %s out of %s: %w: nothing was copied", rel, name, err)
		}
		total.Files += st.Files
		total.Bytes += st.Bytes
		for _, l := range st.Links {
			total.Links = append(total.Links, archive.Link{Name: path.Join(dir, l.Name), Target: l.Target})
		}
	}

	// What arrived: files and links (directories are made as needed), each beneath one
	// of the paths asked for.
	var entries []string
	err = filepath.WalkDir(stagingPath, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(stagingPath, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !beneathAny(rel, rels) || inGitDir(rel) {
			return fmt.Errorf("sandbox %s sent %q, which was not asked for: nothing was copied", name, rel)
		}
		entries = append(entries, rel)
		return nil
	})
	if err != nil {
		return err
	}

	// Refuse before writing anything: a host entry that would be replaced, or a link or
	// file on the host where a directory is needed.
	var conflicts []string
	var inTheWay []string // non-directories to remove on the way, with --force
	seen := map[string]bool{}
	for _, rel := range entries {
		parts, _ := hostfs.Split(rel)
		for i := 1; i <= len(parts); i++ {
			prefix := strings.Join(parts[:i], "/")
			if seen[prefix] {
				continue
			}
			seen[prefix] = true
			e, err := repo.Lstat(prefix)
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err != nil {
				return err
			}
			last := i == len(parts)
			switch {
			case last && e.Mode.IsDir():
				return apperr.Conflict("remove or rename it on the host first", "%s is a directory on the host; the sandbox has a file there", termtext.Escape(e.Path))
			case last:
				conflicts = append(conflicts, describe(e))
			case e.Mode.IsDir():
				continue
			default:
				conflicts = append(conflicts, describe(e)+" (the sandbox has a directory there)")
				inTheWay = append(inTheWay, prefix)
			}
			if !last {
				break
			}
		}
	}
	if len(conflicts) > 0 && !opts.force {
		return apperr.Conflict("add --force to replace them (a link is replaced itself, never followed)",
			"these exist on the host and would be replaced:\n  %s", strings.Join(conflicts, "\n  "))
	}
	for _, rel := range inTheWay {
		if err := repo.Remove(rel); err != nil {
			return err
		}
	}
	for _, rel := range entries {
		if err := hostfs.Rename(staging, rel, repo, rel); err != nil {
			return err
		}
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: copied %d file(s), %d bytes, from %s:/workspace into %s\n", total.Files, total.Bytes, name, g.Repo)
	for _, l := range total.Links {
		switch {
		case archive.Escapes(l.Name, l.Target):
			fmt.Fprintf(f.IO.ErrOut, "paddock: warning: %s is a symlink to %s, outside the repository; kept as a link (paddock never writes through it)\n",
				termtext.Escape(l.Name), termtext.Escape(l.Target))
		case inGitDir(path.Join(path.Dir(l.Name), l.Target)):
			fmt.Fprintf(f.IO.ErrOut, "paddock: warning: %s is a symlink to %s, into .git; kept as a link (paddock never writes through it)\n",
				termtext.Escape(l.Name), termtext.Escape(l.Target))
		}
	}
	return nil
}

// describe names a host entry for a conflict message: its full path, and where it
// points when it is a link. The sandbox may have chosen both on an earlier sync.
func describe(e hostfs.Entry) string {
	if e.Mode&fs.ModeSymlink != 0 {
		return termtext.Escape(e.Path) + " (a symlink to " + termtext.Escape(e.Target) + ")"
	}
	return termtext.Escape(e.Path)
}

// beneathAny reports whether rel is one of roots or lies beneath one.
func beneathAny(rel string, roots []string) bool {
	for _, r := range roots {
		if rel == r || strings.HasPrefix(rel, r+"/") {
			return true
		}
	}
	return false
}

// inGitDir reports whether any component of rel is .git (in any case, for
// case-insensitive filesystems).
func inGitDir(rel string) bool {
	for _, c := range strings.Split(rel, "/") {
		if strings.EqualFold(c, ".git") {
			return true
		}
	}
	return false
}
