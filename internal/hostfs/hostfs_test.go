package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// setup makes a destination and, beside it, an "outside" directory standing for
// everything a sandbox must never reach (.git/hooks, /etc). The destination holds the
// links a sandbox could have planted on an earlier transfer.
func setup(t *testing.T) (dst, outside string, d *Dir) {
	t.Helper()
	top := t.TempDir()
	dst = filepath.Join(top, "dst")
	outside = filepath.Join(top, "outside")
	for _, p := range []string{dst, outside, filepath.Join(dst, "real"), filepath.Join(dst, ".git", "hooks")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(outside, "victim"), []byte("original"), 0o644))
	links := map[string]string{
		"abs":      outside,              // absolute, out of the destination
		"rel":      "../outside",         // relative, out of the destination
		"hooks":    ".git/hooks",         // inside the destination, to a place that runs code
		"inside":   "real",               // inside, harmless-looking
		"dangling": "../outside/new-dir", // to a directory that does not exist yet
		"victim":   filepath.Join(outside, "victim"),
	}
	for name, target := range links {
		must(t, os.Symlink(target, filepath.Join(dst, name)))
	}
	must(t, os.WriteFile(filepath.Join(dst, "file"), []byte("x"), 0o644))
	d, err := Open(dst)
	must(t, err)
	t.Cleanup(func() { d.Close() })
	return dst, outside, d
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// untouched fails if anything outside the destination changed: a new entry in outside
// or in .git/hooks, or the victim's content.
func untouched(t *testing.T, dst, outside string) {
	t.Helper()
	outsideUntouched(t, outside, filepath.Join(dst, ".git", "hooks"))
}

func outsideUntouched(t *testing.T, dirs ...string) {
	t.Helper()
	outside := dirs[0]
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		must(t, err)
		for _, e := range entries {
			if e.Name() != "victim" {
				t.Errorf("%s appeared in %s", e.Name(), dir)
			}
		}
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "victim")); string(data) != "original" {
		t.Errorf("the file outside was changed: %q", data)
	}
}

func TestWritesNeverPassThroughLinks(t *testing.T) {
	for _, name := range []string{
		"abs/x", "rel/x", "hooks/post-checkout", "inside/x", "dangling/x", "file/x",
		"abs/a/b/c", "./rel/x", "rel//x",
	} {
		t.Run(name, func(t *testing.T) {
			dst, outside, d := setup(t)
			_, err := d.WriteFile(name, 0o755, strings.NewReader("#!/bin/sh\necho pwned\n"))
			var le *LinkError
			if !errors.As(err, &le) {
				t.Fatalf("WriteFile(%q) = %v, want a *LinkError", name, err)
			}
			if !strings.HasPrefix(le.Path, dst+"/") {
				t.Errorf("the error names %q, want the full host path", le.Path)
			}
			if err := d.MkdirAll(name, 0o755); !errors.As(err, &le) {
				t.Errorf("MkdirAll(%q) = %v, want a *LinkError", name, err)
			}
			if err := d.Symlink("/etc/passwd", name); !errors.As(err, &le) {
				t.Errorf("Symlink(%q) = %v, want a *LinkError", name, err)
			}
			untouched(t, dst, outside)
		})
	}
}

func TestLinkErrorSaysWhereTheLinkPoints(t *testing.T) {
	_, outside, d := setup(t)
	_, err := d.WriteFile("abs/x", 0o644, strings.NewReader(""))
	if err == nil || !strings.Contains(err.Error(), "is a symlink to "+outside) {
		t.Fatalf("error %v does not say where the link points", err)
	}
	_, err = d.WriteFile("file/x", 0o644, strings.NewReader(""))
	if err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Fatalf("error %v does not say the file is in the way", err)
	}
}

func TestWriteReplacesALinkInsteadOfFollowingIt(t *testing.T) {
	dst, outside, d := setup(t)
	if _, err := d.WriteFile("victim", 0o600, strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	untouched(t, dst, outside)
	fi, err := os.Lstat(filepath.Join(dst, "victim"))
	must(t, err)
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("victim is %v, want a regular file with mode 0600", fi.Mode())
	}
	must(t, d.Symlink("/etc/shadow", "abs"))
	if target, _ := os.Readlink(filepath.Join(dst, "abs")); target != "/etc/shadow" {
		t.Errorf("the link was not replaced: %q", target)
	}
}

func TestCreatesDirectoriesFilesAndLinks(t *testing.T) {
	dst, outside, d := setup(t)
	n, err := d.WriteFile("a/b/c.txt", 0o640, strings.NewReader("hello"))
	if err != nil || n != 5 {
		t.Fatalf("WriteFile = %d, %v", n, err)
	}
	must(t, d.Symlink("../../outside", "a/link"))
	must(t, d.MkdirAll("a/d/e", 0o700))
	must(t, d.ChmodDir("a/d", 0o750))
	e, err := d.Lstat("a/link")
	must(t, err)
	if e.Mode&fs.ModeSymlink == 0 || e.Target != "../../outside" {
		t.Errorf("Lstat(a/link) = %+v", e)
	}
	if _, err := d.Lstat("a/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lstat of a missing name = %v", err)
	}
	data, _ := os.ReadFile(filepath.Join(dst, "a/b/c.txt"))
	fi, _ := os.Stat(filepath.Join(dst, "a/d"))
	if string(data) != "hello" || fi.Mode().Perm() != 0o750 {
		t.Errorf("content %q, dir mode %v", data, fi.Mode())
	}
	// A name made into a link cannot then be written beneath.
	if _, err := d.WriteFile("a/link/x", 0o644, strings.NewReader("")); err == nil {
		t.Error("wrote beneath a link just made")
	}
	untouched(t, dst, outside)
	entries, _ := os.ReadDir(filepath.Join(dst, "a", "b"))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestDirectoryInTheWay(t *testing.T) {
	_, _, d := setup(t)
	if _, err := d.WriteFile("real", 0o644, strings.NewReader("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("WriteFile over a directory = %v", err)
	}
	if err := d.Remove("real"); err == nil {
		t.Error("Remove removed a directory")
	}
}

func TestUnsafeNames(t *testing.T) {
	_, _, d := setup(t)
	for _, name := range []string{"", "/etc/passwd", "..", "../outside/x", "a/../../x", "a/../.git/hooks/x", "a\x00b"} {
		if _, err := d.WriteFile(name, 0o644, strings.NewReader("")); !errors.Is(err, ErrUnsafeName) {
			t.Errorf("WriteFile(%q) = %v, want ErrUnsafeName", name, err)
		}
	}
}

func TestRenameBetweenDirectories(t *testing.T) {
	dst, outside, d := setup(t)
	staging := filepath.Join(dst, ".staging")
	must(t, os.MkdirAll(filepath.Join(staging, "hooks"), 0o755))
	must(t, os.WriteFile(filepath.Join(staging, "hooks", "post-checkout"), []byte("x"), 0o755))
	must(t, os.WriteFile(filepath.Join(staging, "new"), []byte("y"), 0o644))
	s, err := Open(staging)
	must(t, err)
	defer s.Close()
	var le *LinkError
	if err := Rename(s, "hooks/post-checkout", d, "hooks/post-checkout"); !errors.As(err, &le) {
		t.Fatalf("Rename through the hooks link = %v", err)
	}
	must(t, Rename(s, "new", d, "sub/new"))
	if data, _ := os.ReadFile(filepath.Join(dst, "sub", "new")); string(data) != "y" {
		t.Errorf("moved file holds %q", data)
	}
	untouched(t, dst, outside)
}

// TestSwapRace flips a directory of the destination between a real directory and a
// link to the outside while writes run beneath it, as a process with write access to
// the destination could: no write may ever land outside.
func TestSwapRace(t *testing.T) {
	dst, outside, d := setup(t)
	flip := filepath.Join(dst, "flip")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			os.Remove(flip)
			os.Mkdir(flip, 0o755)
			os.RemoveAll(flip)
			os.Symlink(outside, flip)
		}
	}()
	written := 0
	for i := 0; i < 3000; i++ {
		if _, err := d.WriteFile("flip/sub/f", 0o644, strings.NewReader("x")); err == nil {
			written++
		}
	}
	stop.Store(true)
	wg.Wait()
	untouched(t, dst, outside)
	t.Logf("%d of 3000 writes landed inside while the directory flipped", written)
}

// FuzzWrite writes under arbitrary names into a destination holding planted links:
// whatever the name, nothing outside the destination may appear or change.
func FuzzWrite(f *testing.F) {
	for _, s := range []string{"a", "abs/x", "rel/x", "hooks/pre-commit", "inside/x", "../x", "/etc/x",
		"a/../abs/y", "dangling/z", "./file/y", "real/./x", "victim", "a//b", "real/..", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		dst, outside, d := setup(t)
		d.WriteFile(name, 0o644, strings.NewReader("x"))
		d.MkdirAll(name, 0o755)
		d.Symlink("/", name)
		d.Remove(name)
		// A name may lead into .git/hooks by its own components (callers refuse
		// those): only what lies outside the destination is checked here.
		outsideUntouched(t, outside)
		if _, err := os.Stat(filepath.Join(dst, ".git", "hooks")); err != nil {
			t.Errorf(".git/hooks is gone: %v", err)
		}
	})
}
