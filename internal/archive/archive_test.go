package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name, link, body string
	typ              byte
	mode             int64
}

func tarOf(t *testing.T, entries ...entry) *bytes.Buffer {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: mode, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	return &buf
}

// TestUnpackNeverWritesOutside feeds archives a hostile sandbox could send.
func TestUnpackNeverWritesOutside(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []entry
	}{
		{"dotdot", []entry{{name: "../escaped", body: "x", typ: tar.TypeReg}}},
		{"absolute", []entry{{name: "/tmp/escaped-abs", body: "x", typ: tar.TypeReg}}},
		{"through a symlink to outside", []entry{
			{name: "link", link: "OUTSIDE", typ: tar.TypeSymlink},
			{name: "link/escaped", body: "x", typ: tar.TypeReg},
		}},
		{"through a relative symlink", []entry{
			{name: "up", link: "..", typ: tar.TypeSymlink},
			{name: "up/escaped", body: "x", typ: tar.TypeReg},
		}},
		{"through a link to a place inside that runs code", []entry{
			{name: "hooks", link: ".git/hooks", typ: tar.TypeSymlink},
			{name: "hooks/post-checkout", body: "x", typ: tar.TypeReg},
		}},
		{"dotdot that stays inside", []entry{{name: "dist/../.git/hooks/post-checkout", body: "x", typ: tar.TypeReg}}},
		{"through a link already on the host", []entry{{name: "planted/escaped", body: "x", typ: tar.TypeReg}}},
		{"a directory entry through a link already on the host", []entry{{name: "planted/", typ: tar.TypeDir}, {name: "planted/escaped", body: "x", typ: tar.TypeReg}}},
		{"overwrite a symlink's target", []entry{
			{name: "f", link: "OUTSIDE/victim", typ: tar.TypeSymlink},
			{name: "f", body: "overwritten", typ: tar.TypeReg},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			outside := filepath.Join(base, "outside")
			dst := filepath.Join(base, "dst")
			os.Mkdir(outside, 0o755)
			os.Mkdir(dst, 0o755)
			os.WriteFile(filepath.Join(outside, "victim"), []byte("original"), 0o644)
			os.MkdirAll(filepath.Join(dst, ".git", "hooks"), 0o755)
			os.Symlink(outside, filepath.Join(dst, "planted"))
			for i := range tc.entries {
				if tc.entries[i].link != "" {
					tc.entries[i].link = replaceOutside(tc.entries[i].link, outside)
				}
			}
			Unpack(tarOf(t, tc.entries...), dst, Options{}) // an error is fine; an escape is not
			if _, err := os.Stat(filepath.Join(base, "escaped")); err == nil {
				t.Fatal("wrote beside the destination")
			}
			if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
				t.Fatal("wrote through a symlink")
			}
			if hooks, _ := os.ReadDir(filepath.Join(dst, ".git", "hooks")); len(hooks) > 0 {
				t.Fatal("wrote into .git/hooks through a link")
			}
			if data, _ := os.ReadFile(filepath.Join(outside, "victim")); string(data) != "original" {
				t.Fatal("overwrote a file outside through a symlink")
			}
		})
	}
}

func replaceOutside(s, outside string) string {
	if len(s) >= 7 && s[:7] == "OUTSIDE" {
		return outside + s[7:]
	}
	return s
}

func TestPackUnpackRoundTrip(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sub"), 0o750)
	os.WriteFile(filepath.Join(src, "sub", "bin"), []byte{0, 1, 2, 255}, 0o600)
	os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("run.sh", filepath.Join(src, "link"))
	var buf bytes.Buffer
	if err := Pack(&buf, src, "top"); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	st, err := Unpack(&buf, dst, Options{StripComponents: 1})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 3 {
		t.Fatalf("unpacked %d files, want 3", st.Files)
	}
	if data, _ := os.ReadFile(filepath.Join(dst, "sub", "bin")); !bytes.Equal(data, []byte{0, 1, 2, 255}) {
		t.Fatalf("binary content %v", data)
	}
	if fi, _ := os.Stat(filepath.Join(dst, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if l, _ := os.Readlink(filepath.Join(dst, "link")); l != "run.sh" {
		t.Fatalf("link %q", l)
	}
	if len(st.Links) != 1 || st.Links[0] != (Link{Name: "link", Target: "run.sh"}) {
		t.Fatalf("links reported: %+v", st.Links)
	}
}

func TestEscapes(t *testing.T) {
	for _, tc := range []struct {
		name, target string
		want         bool
	}{
		{"a", "/etc/passwd", true},
		{"a", "..", true},
		{"dist/a", "../../x", true},
		{"dist/a", "../x", false},
		{"dist/a", "b/c", false},
		{"a", ".git/hooks", false},
	} {
		if got := Escapes(tc.name, tc.target); got != tc.want {
			t.Errorf("Escapes(%q, %q) = %v", tc.name, tc.target, got)
		}
	}
}

// TestUnpackDropsSpecialModeBits: paddock may run as root, and a setuid file from a
// sandbox would be a way to root on the host.
func TestUnpackDropsSpecialModeBits(t *testing.T) {
	dst := t.TempDir()
	buf := tarOf(t,
		entry{name: "suid", body: "x", typ: tar.TypeReg, mode: 0o4755},
		entry{name: "sgid-dir", typ: tar.TypeDir, mode: 0o2777},
		entry{name: "dev", typ: tar.TypeChar},
		entry{name: "fifo", typ: tar.TypeFifo},
		entry{name: "hard", link: "suid", typ: tar.TypeLink},
	)
	if _, err := Unpack(buf, dst, Options{}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dst, "suid")); fi.Mode() != 0o755 {
		t.Errorf("suid file mode %v, want -rwxr-xr-x", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Join(dst, "sgid-dir")); fi.Mode()&(os.ModeSetgid|os.ModeSetuid|os.ModeSticky) != 0 {
		t.Errorf("directory mode %v keeps special bits", fi.Mode())
	}
	for _, name := range []string{"dev", "fifo", "hard"} {
		if _, err := os.Lstat(filepath.Join(dst, name)); err == nil {
			t.Errorf("%s was made on the host", name)
		}
	}
}

// TestUnpackTop: a copy of dist takes only what is beneath dist, whatever else the
// sandbox's archive holds, and leaves the modes of directories already on the host.
func TestUnpackTop(t *testing.T) {
	dst := t.TempDir()
	os.Mkdir(filepath.Join(dst, "dist"), 0o700)
	buf := tarOf(t,
		entry{name: "dist/", typ: tar.TypeDir, mode: 0o777},
		entry{name: "dist/app.js", body: "x", typ: tar.TypeReg, mode: 0o666},
		entry{name: "dist/sub/", typ: tar.TypeDir, mode: 0o777},
		entry{name: ".git/hooks/pre-commit", body: "#!/bin/sh\n", typ: tar.TypeReg, mode: 0o755},
	)
	_, err := Unpack(buf, dst, Options{Top: "dist"})
	if err == nil || !strings.Contains(err.Error(), ".git/hooks/pre-commit") {
		t.Fatalf("an entry outside dist: %v, want an error naming it", err)
	}
	if _, err := os.Lstat(filepath.Join(dst, ".git")); err == nil {
		t.Fatal("an entry outside dist was written")
	}
	if fi, _ := os.Stat(filepath.Join(dst, "dist")); fi.Mode().Perm() != 0o700 {
		t.Errorf("the host's dist is %v, want its own 0700", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Join(dst, "dist", "app.js")); fi.Mode().Perm() != 0o644 {
		t.Errorf("dist/app.js is %v, want 0644 (no write for group and others)", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Join(dst, "dist", "sub")); fi.Mode().Perm() != 0o755 {
		t.Errorf("dist/sub is %v, want 0755", fi.Mode().Perm())
	}
}

// TestUnpackMaxBytes: an entry that would take the copy past MaxBytes is refused by its
// header, before a byte of it is written; a sandbox's sparse file of 64 GiB (nothing to
// it but its header here, as the stream is cut there) writes nothing.
func TestUnpackMaxBytes(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "a.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 5})
	tw.Write([]byte("hello"))
	tw.WriteHeader(&tar.Header{Name: "huge.img", Typeflag: tar.TypeReg, Mode: 0o644, Size: 64 << 30})
	tw.Flush()
	dst := t.TempDir()
	st, err := Unpack(&buf, dst, Options{MaxBytes: 1 << 20})
	var nr *NoRoomError
	if !errors.As(err, &nr) || nr.Name != "huge.img" || nr.Size != 64<<30 || nr.Room != 1<<20-5 {
		t.Fatalf("got %v, want huge.img refused with %d bytes of room", err, 1<<20-5)
	}
	if !strings.Contains(err.Error(), "huge.img is 64.0 GiB: more than the 1024.0 KiB a copy may still take of the host's free disk") {
		t.Errorf("message: %v", err)
	}
	if st.Files != 1 || st.Bytes != 5 {
		t.Errorf("stats %+v", st)
	}
	if _, err := os.Lstat(filepath.Join(dst, "huge.img")); !os.IsNotExist(err) {
		t.Errorf("huge.img was made: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "a.txt")); string(b) != "hello" {
		t.Errorf("a.txt: %q", b)
	}
}
