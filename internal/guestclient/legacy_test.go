package guestclient_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestproto"
)

// legacyCommit is the last commit whose guest speaks guestproto.LegacyProtocol (gRPC).
const legacyCommit = "ea3e859"

// legacyGuest builds the guest of legacyCommit from the repository's history: a sandbox
// an older paddock started runs that program.
func legacyGuest(t *testing.T) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	repo := strings.TrimSpace(string(top))
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", legacyCommit+"^{commit}").Run(); err != nil {
		t.Skipf("the checkout has no commit %s (a shallow clone): %v", legacyCommit, err)
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", repo, legacyCommit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive: %v: %s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "paddock-guest-v1")
	build := exec.Command("go", "build", "-tags", "grpcnotrace", "-o", bin, "./cmd/paddock-guest")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the guest of %s: %v: %s", legacyCommit, err, out)
	}
	return bin
}

// TestLegacyGuest: the daemon still reaches a guest of protocol 1, so that a sandbox an
// older paddock started can be used, synced and stopped after an upgrade: it connects
// on a second dial, and every service answers as the current guest's would.
func TestLegacyGuest(t *testing.T) {
	bin := legacyGuest(t)
	sock := filepath.Join(t.TempDir(), "agent.sock")
	guest := exec.Command(bin, "guest", "serve", "--socket", sock)
	var guestLog bytes.Buffer
	guest.Stderr = &guestLog
	if err := guest.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		guest.Process.Kill()
		guest.Wait()
		if t.Failed() {
			t.Logf("guest's log:\n%s", guestLog.String())
		}
	})
	dials := 0
	dial := func(ctx context.Context) (net.Conn, error) {
		dials++
		var d net.Dialer
		for {
			c, err := d.DialContext(ctx, "unix", sock)
			if err == nil || ctx.Err() != nil {
				return c, err
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := guestclient.New(ctx, dial, "v-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.Peer(); p.Protocol != guestproto.LegacyProtocol || dials != 2 {
		t.Fatalf("peer %+v after %d dials; want protocol %d on the second", p, dials, guestproto.LegacyProtocol)
	}

	if _, err := c.Info(ctx); err != nil {
		t.Errorf("Info: %v", err)
	}
	var out bytes.Buffer
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", "cat; echo done; exit 3"},
		Dir: "/", Stdin: strings.NewReader("in "), Stdout: &out})
	if err != nil || code != 3 || out.String() != "in done\n" {
		t.Errorf("Exec = %d, %v, output %q; want 3 and %q", code, err, out.String(), "in done\n")
	}

	root := t.TempDir()
	big := strings.Repeat("x", 3<<20) // over the file stream's threshold: the legacy guest's own calls carry it
	if _, err := c.WriteFile(ctx, root, "d/f", 0o644, true, strings.NewReader(big)); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	var got bytes.Buffer
	if _, err := c.ReadFile(ctx, root, "d/f", &got); err != nil || got.String() != big {
		t.Errorf("ReadFile: %d bytes, %v; want what was written", got.Len(), err)
	}
	if _, err := c.Stat(ctx, root, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a missing file = %v, want fs.ErrNotExist", err)
	}
	os.Symlink("/etc", filepath.Join(root, "out"))
	if _, err := c.Stat(ctx, root, "out/passwd"); !errors.Is(err, guestclient.ErrPathEscapes) {
		t.Errorf("Stat through a symlink out of the root = %v, want ErrPathEscapes", err)
	}
	var tarball bytes.Buffer
	if err := c.TarOut(ctx, root, "d", &tarball); err != nil || tarball.Len() < len(big) {
		t.Errorf("TarOut: %d bytes, %v", tarball.Len(), err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			io.Copy(conn, conn)
			conn.Close()
		}
	}()
	tun, err := c.Forward(ctx, uint32(ln.Addr().(*net.TCPAddr).Port))
	if err != nil {
		t.Fatalf("Forward: %v", err)
	}
	io.WriteString(tun, "echo me")
	tun.(interface{ CloseWrite() error }).CloseWrite()
	echoed, err := io.ReadAll(tun)
	if err != nil || string(echoed) != "echo me" {
		t.Errorf("a tunnel echoed %q, %v", echoed, err)
	}
	tun.Close()
}
