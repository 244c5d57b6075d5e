package guest

import (
	"github.com/paddockhq/paddock/internal/guestproto"

	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRelPath checks the lexical half of path resolution: whatever path a caller gives,
// relPath either refuses it as an escape or returns a clean relative path that names
// the same place beneath the root (the other half, symlinks, is os.Root's; FuzzFiles
// covers both through the service).
func FuzzRelPath(f *testing.F) {
	for _, s := range [][2]string{
		{"/workspace", "a/b"}, {"/workspace", ""}, {"/workspace", "."}, {"/workspace", ".."},
		{"/workspace", "../workspace/x"}, {"/workspace", "/workspace/../etc/passwd"}, {"/workspace", "/workspacex/a"},
		{"/workspace", "a/../../b"}, {"/workspace", "/workspace"}, {"/workspace", "//workspace//a//"},
		{"/", "../../etc"}, {"/", "/etc/passwd"}, {"/ws/", "/ws/a"}, {"/workspace", "a\x00b"}, {"/workspace", "./-x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, root, p string) {
		if !filepath.IsAbs(root) {
			return // openPath refuses it first
		}
		root = filepath.Clean(root)
		rel, err := relPath(root, p)
		if err != nil {
			if guestproto.CodeOf(err) != guestproto.PathEscapes {
				t.Fatalf("relPath(%q, %q): %v, want PathEscapes", root, p, err)
			}
			return
		}
		if path.IsAbs(rel) || rel != path.Clean(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("relPath(%q, %q) = %q: not a clean path beneath the root", root, p, rel)
		}
		full := filepath.Join(root, rel)
		if full != root && !strings.HasPrefix(full, strings.TrimSuffix(root, "/")+"/") {
			t.Fatalf("relPath(%q, %q) = %q, which is %s: outside the root", root, p, rel, full)
		}
		want := filepath.Join(root, p)
		if filepath.IsAbs(p) {
			want = filepath.Clean(p)
		}
		if full != want {
			t.Fatalf("relPath(%q, %q) = %q names %s, want %s", root, p, rel, full, want)
		}
	})
}
