package guest_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/paddockhq/paddock/internal/guest"
	"github.com/paddockhq/paddock/internal/guestclient"
)

const fuzzSecret = "outside-secret"

// FuzzFiles drives every Files call through a real client and guest with an arbitrary
// path, beneath a root that holds links planted to lead out of it (to its parents, to an
// absolute directory outside, to itself). Whatever the path, nothing outside the root
// may be created, changed or removed, and no read may return what lies outside. A path
// starting with "@" is made absolute by putting the root in its place.
func FuzzFiles(f *testing.F) {
	for _, s := range []string{
		"a", "dir/f", "new/deep/f", ".", "..", "../sentinel", "up/sentinel", "up/outside/secret", "abs/secret",
		"abs", "up", "dir/../up/x", "loop/x", "dir/up2/outside/secret", "@", "@/dir/f", "@/../sentinel",
		"@/../../outside/secret", "/etc/passwd", "/", "dir//f/", "./abs/../abs/secret", "self/self/abs/x",
	} {
		f.Add(s)
	}
	client := fuzzClient(f)
	f.Fuzz(func(t *testing.T, name string) {
		tmp := t.TempDir()
		root := filepath.Join(tmp, "a", "b", "root")
		outside := filepath.Join(tmp, "outside")
		for _, d := range []string{filepath.Join(root, "dir"), outside} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for p, data := range map[string]string{filepath.Join(outside, "secret"): fuzzSecret, filepath.Join(tmp, "a", "sentinel"): fuzzSecret} {
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for link, target := range map[string]string{"up": "../..", "abs": outside, "loop": "loop", "self": ".", "dir/up2": "../../.."} {
			if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
				t.Fatal(err)
			}
		}
		before := tree(t, tmp, root)
		if rest, ok := strings.CutPrefix(name, "@"); ok {
			name = root + rest
		}

		ctx := t.Context()
		var read bytes.Buffer
		client.ReadFile(ctx, root, name, &read)
		if strings.Contains(read.String(), fuzzSecret) {
			t.Fatalf("ReadFile(%q) read a file outside the root", name)
		}
		if entries, err := client.List(ctx, root, name); err == nil {
			for _, e := range entries {
				if e.GetName() == "secret" || e.GetName() == "sentinel" {
					t.Fatalf("List(%q) listed a directory outside the root", name)
				}
			}
		}
		var out bytes.Buffer
		client.TarOut(ctx, root, name, &out)
		if strings.Contains(out.String(), fuzzSecret) {
			t.Fatalf("TarOut(%q) packed a file outside the root", name)
		}
		client.WriteFile(ctx, root, name, 0o644, true, strings.NewReader("written"))
		client.Mkdir(ctx, root, name+"/sub", 0o755, true)
		client.TarIn(ctx, root, name, bytes.NewReader(fuzzArchive()))
		client.Remove(ctx, root, name+"/secret", false)
		client.Remove(ctx, root, name, true)

		if after := tree(t, tmp, root); after != before {
			t.Fatalf("calls on %q changed what lies outside the root:\nbefore:\n%s\nafter:\n%s", name, before, after)
		}
	})
}

// fuzzArchive is a tar whose entries try to leave through a link they make themselves.
func fuzzArchive() []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "x", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("x"))
	tw.WriteHeader(&tar.Header{Name: "l", Linkname: "../../..", Typeflag: tar.TypeSymlink})
	tw.WriteHeader(&tar.Header{Name: "l/secret", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	tw.Write([]byte("y"))
	tw.Close()
	return buf.Bytes()
}

// tree describes everything beneath dir except the subtree at skip: names, types and
// the contents of regular files.
func tree(t *testing.T, dir, skip string) string {
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return filepath.SkipDir
		}
		b.WriteString(p + " " + d.Type().String())
		if d.Type().IsRegular() {
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

// fuzzClient starts a guest in-process and returns a client connected to it over a
// socket pair.
func fuzzClient(f *testing.F) *guestclient.Client {
	srv := guest.NewServer(guest.Options{Sandbox: "fuzz", Version: "v0.0.0-fuzz"})
	dial := func(context.Context) (net.Conn, error) {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		conns := make([]net.Conn, 2)
		for i, fd := range fds {
			file := os.NewFile(uintptr(fd), "socketpair")
			conns[i], err = net.FileConn(file)
			file.Close()
			if err != nil {
				return nil, err
			}
		}
		go srv.ServeConn(f.Context(), conns[1])
		return conns[0], nil
	}
	c, err := guestclient.New(f.Context(), dial, "v0.0.0-fuzz")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })
	return c
}
