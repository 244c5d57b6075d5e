package sshhost_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/bwrap"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/sandbox"
)

// Each benchmark does the same thing b.N times in a sandbox on the ssh host (the test's
// sshd, on this machine) and b.N times in a bwrap sandbox made here directly, in the same
// run, and reports both and their ratio: what going through SSH and the wire costs.

// pair is a guest client of a sandbox on the host, and one of a local bwrap sandbox.
func pair(b *testing.B) (remote, local *guestclient.Client) {
	fx := newFixture(b)
	remote = fx.run(b, "bench1")
	dir := shortDir(b)
	lb, err := bwrap.New(backend.Env{Dir: filepath.Join(dir, "sb")})
	if err != nil {
		b.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	agent, err := sandbox.InstallGuest(self, filepath.Join(dir, "agent"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	id := backend.ID("benchlocal")
	if err := lb.Create(ctx, backend.Spec{ID: id, Name: "bench", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lb.Destroy(context.Background(), id) })
	if err := lb.Start(ctx, id); err != nil {
		b.Fatal(err)
	}
	local, err = guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return lb.Dial(ctx, id) }, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { local.Close() })
	return remote, local
}

// shortDir is a temporary directory short enough for the sandbox's unix socket, which a
// sandbox made as root can reach.
func shortDir(b *testing.B) string {
	dir, err := os.MkdirTemp("", "pdkb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkExec: run `true` in the sandbox, start to exit code.
func BenchmarkExec(b *testing.B) {
	remote, local := pair(b)
	ctx := context.Background()
	run := func(c *guestclient.Client) time.Duration {
		start := time.Now()
		if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
			b.Fatalf("exec: %d %v", code, err)
		}
		return time.Since(start)
	}
	run(remote)
	run(local)
	b.ResetTimer()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		ours += run(remote)
		base += run(local)
	}
	backendtest.ReportRatio(b, ours, base)
}

// BenchmarkWriteFile: write 16 MiB into /workspace through the Files service.
func BenchmarkWriteFile(b *testing.B) {
	remote, local := pair(b)
	ctx := context.Background()
	data := bytes.Repeat([]byte("paddock!"), 2<<20)
	write := func(c *guestclient.Client) time.Duration {
		start := time.Now()
		if _, err := c.WriteFile(ctx, "/workspace", "big", 0o644, false, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		ours += write(remote)
		base += write(local)
	}
	backendtest.ReportRatio(b, ours, base)
}
