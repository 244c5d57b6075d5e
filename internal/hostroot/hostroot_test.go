package hostroot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	toRoot := filepath.Join(dir, "to-root")
	if err := os.Symlink("/", toRoot); err != nil {
		t.Fatal(err)
	}
	viaDotDot := filepath.Join(dir, "to-root-too")
	if err := os.Symlink(strings.Repeat("../", strings.Count(dir, "/")+2), viaDotDot); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want string // "" for accepted, else a part of the error
	}{
		{rootfs, ""},
		{rootfs + "/", ""},
		{"/", "the host's own root"},
		{"/.", "the host's own root"},
		{"//", "the host's own root"},
		{"/usr/..", "the host's own root"},
		{toRoot, "the host's own root"},
		{toRoot + "/", "the host's own root"},
		{viaDotDot, "the host's own root"},
		{"relative/dir", "not an absolute path"},
		{file, "not a directory"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		err := Check(tc.path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%q) = %v, want nil", tc.path, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%q) = %v, want an error saying %q", tc.path, err, tc.want)
		}
	}
}
