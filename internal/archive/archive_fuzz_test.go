package archive

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzUnpack unpacks archives made of arbitrary entries into a destination beside a
// directory holding a sentinel, with links already planted in the destination. Whatever
// the archive, no entry may land outside the destination and nothing outside may change.
//
// The input is a script of entries, one a line: a type letter (f file, d directory, l
// symlink, h hard link, anything else a fifo), the name, and for links ">" and the
// target. Link targets are kept within the test's directory: an absolute one is moved
// under the sentinel directory, a relative one that climbs out of the test's directory
// is pointed at it, so that a bug writes there and is seen, never elsewhere on the host.
func FuzzUnpack(f *testing.F) {
	for _, s := range []string{
		"f../escaped", "f/tmp/escaped-abs", "l" + "link>/\nflink/escaped", "lup>..\nfup/escaped", "lup>../..\nfup/outside/victim",
		"lhooks>.git/hooks\nfhooks/post-checkout", "fdist/../.git/hooks/post-checkout", "fplanted/escaped",
		"dplanted/\nfplanted/escaped", "lf>/victim\nff", "lrel>../outside/victim\nfrel", "hhard>../outside/victim",
		"ha>/victim", "dd\nld/x>..\nfd/x/escaped", "fa/b/c\nla>..\nfa/b/escaped", "x fifo", "f./.\nf.", "f\x00",
		"lself>.\nfself/self/up/escaped", "fplanted", "dup\nfup/escaped",
	} {
		f.Add(s, uint8(0))
	}
	f.Add("fx/y/z\nfx/../escaped", uint8(1))
	f.Fuzz(func(t *testing.T, script string, strip uint8) {
		base := t.TempDir()
		outside, dst := filepath.Join(base, "outside"), filepath.Join(base, "dst")
		for _, d := range []string{outside, filepath.Join(dst, ".git", "hooks")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("original"), 0o644); err != nil {
			t.Fatal(err)
		}
		for link, target := range map[string]string{"planted": outside, "up": ".."} {
			if err := os.Symlink(target, filepath.Join(dst, link)); err != nil {
				t.Fatal(err)
			}
		}
		before := treeOutside(t, base, dst)

		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, line := range strings.Split(script, "\n") {
			if line == "" {
				continue
			}
			name, link, _ := strings.Cut(line[1:], ">")
			hdr := &tar.Header{Name: name, Mode: 0o644}
			switch line[0] {
			case 'f':
				hdr.Typeflag, hdr.Size = tar.TypeReg, 1
			case 'd':
				hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
			case 'l':
				hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, confine(link, name, base, dst, outside)
			case 'h':
				hdr.Typeflag, hdr.Linkname = tar.TypeLink, confine(link, name, base, dst, outside)
			default:
				hdr.Typeflag = tar.TypeFifo
			}
			if tw.WriteHeader(hdr) != nil {
				return // not an archive tar can write
			}
			if hdr.Size > 0 {
				tw.Write([]byte("x"))
			}
		}
		if tw.Close() != nil {
			return
		}
		Unpack(&buf, dst, Options{StripComponents: int(strip % 3)}) // an error is fine; an escape is not

		if after := treeOutside(t, base, dst); after != before {
			t.Fatalf("unpacking %q changed what lies outside the destination:\nbefore:\n%s\nafter:\n%s", script, before, after)
		}
	})
}

// confine keeps a link target within base (see FuzzUnpack).
func confine(target, name, base, dst, outside string) string {
	if path.IsAbs(target) {
		return filepath.Join(outside, target)
	}
	p := filepath.Join(dst, path.Dir(name), target)
	if p != base && !strings.HasPrefix(p, base+"/") {
		return outside
	}
	return target
}

// treeOutside describes everything beneath base except dst: names, types, modes and the
// contents of regular files.
func treeOutside(t *testing.T, base, dst string) string {
	var b strings.Builder
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dst {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
