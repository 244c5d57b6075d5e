package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/paddockhq/paddock/internal/atomicfile"
)

func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	for _, want := range []string{"first\n", "second, longer\n"} {
		if err := atomicfile.Write(path, []byte(want), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("read %q, want %q", got, want)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want the file alone", len(entries))
	}
	if err := atomicfile.Write(filepath.Join(dir, "no", "such", "dir"), nil, 0o644); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}
