package cli

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/paddockhq/paddock/internal/api"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/archive"
)

// syncFiles copies /workspace paths out into the same paths of the host repository. It
// unpacks everything into a staging directory first (never writing outside it), checks
// for host files it would overwrite, and only then moves the files into place: a refusal
// leaves the host repository untouched.
func syncFiles(ctx context.Context, f *Factory, c *api.Client, name string, opts *syncOptions) error {
	info, err := c.Get(ctx, name)
	if err != nil {
		return err
	}
	g, err := hostRepo(ctx, f, info)
	if err != nil {
		return err
	}
	staging, err := os.MkdirTemp(g.Repo, ".paddock-files-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	var total archive.Stats
	for _, p := range opts.files {
		rel := path.Clean(strings.TrimPrefix(strings.TrimPrefix(p, "/workspace"), "/"))
		if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return usagef("--files takes paths inside /workspace, got %q", p)
		}
		body, err := c.TarOutBeneath(ctx, name, "/workspace", "/workspace/"+rel)
		if err != nil {
			return err
		}
		dst := filepath.Join(staging, filepath.FromSlash(path.Dir(rel)))
		if err := os.MkdirAll(dst, 0o755); err != nil {
			body.Close()
			return err
		}
		st, err := archive.Unpack(body, dst, archive.Options{})
		body.Close()
		if err != nil {
			return fmt.Errorf("copy %s out of %s: %w", rel, name, err)
		}
		total.Files += st.Files
		total.Bytes += st.Bytes
	}
	// Refuse before writing anything.
	var conflicts []string
	filepath.WalkDir(staging, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(staging, p)
		if _, err := os.Lstat(filepath.Join(g.Repo, rel)); err == nil {
			conflicts = append(conflicts, rel)
		}
		return nil
	})
	if len(conflicts) > 0 && !opts.force {
		return apperr.Conflict("add --force to overwrite them", "these files exist in %s and would be overwritten: %s", g.Repo, strings.Join(conflicts, ", "))
	}
	err = filepath.WalkDir(staging, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(staging, p)
		dst := filepath.Join(g.Repo, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if fi, err := os.Lstat(dst); err == nil && fi.IsDir() {
			return fmt.Errorf("%s is a directory on the host", rel)
		}
		os.Remove(dst) // a symlink there is replaced, never followed
		return os.Rename(p, dst)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: copied %d file(s), %d bytes, from %s:/workspace into %s\n", total.Files, total.Bytes, name, g.Repo)
	return nil
}
