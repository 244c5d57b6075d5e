package guest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRenameHolding: a rename over a file hands back that file, held open, so that its
// blocks are freed when the holder lets it go; over a link, the link itself (not what
// it points at); over nothing, nothing.
func TestRenameHolding(t *testing.T) {
	dir := t.TempDir()
	b, err := openBeneath(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ino := func(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("old", "old content")
	before, _ := os.Lstat(filepath.Join(dir, "old"))
	write("new", "new content")
	held, err := b.RenameHolding("new", "old")
	if err != nil || held == nil {
		t.Fatalf("rename over a file: %v, held %v", err, held)
	}
	fi, err := held.Stat()
	if err != nil || ino(fi) != ino(before) || fi.Size() != int64(len("old content")) {
		t.Errorf("held is not the replaced file: %v %v", fi, err)
	}
	held.Close()
	if got, _ := os.ReadFile(filepath.Join(dir, "old")); string(got) != "new content" {
		t.Errorf("after the rename the name holds %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("the old name is still there: %v", err)
	}

	// A link in the way is held as the link: what it names is not opened.
	target := filepath.Join(t.TempDir(), "outside")
	write("x", "x")
	os.WriteFile(target, []byte("outside"), 0o644)
	os.Symlink(target, filepath.Join(dir, "link"))
	held, err = b.RenameHolding("x", "link")
	if err != nil || held == nil {
		t.Fatalf("rename over a link: %v, held %v", err, held)
	}
	if fi, err := held.Stat(); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("a link in the way was followed: %v %v", fi, err)
	}
	held.Close()

	write("y", "y")
	if held, err := b.RenameHolding("y", "fresh"); err != nil || held != nil {
		t.Errorf("rename onto no file: %v, held %v", err, held)
	}
	if _, err := b.RenameHolding("gone", "other"); err == nil {
		t.Error("renaming a missing file succeeded")
	}
}
