package microvm_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/microvm"
)

// consoleBound is the most a VM's console file may hold: consoleMax, and what arrives
// while the file is being cut back.
const consoleBound = 4<<20 + 256<<10

// TestFirecrackerConsoleBoundedWithoutDaemon: a Firecracker VM's guest writes its serial
// console (Firecracker's standard output) without end after the daemon has gone; the
// console file on the host stays bounded, ends with the guest's last words, and the
// sandbox still answers the next daemon. A Firecracker that fails at its start shows its
// last lines in the error, however much it wrote before.
func TestFirecrackerConsoleBoundedWithoutDaemon(t *testing.T) {
	b := fakeFirecracker(t, nil)
	ctx := context.Background()
	id := backend.ID("flood")
	console := filepath.Join(b.dir, string(id), "console.log")
	startSandbox(t, b, id)
	c := connect(t, b, id)
	// The guest's standard output is the VM's console, as a real VM's init writes to
	// /dev/console: the fake's guest process's, whose child the command is. The flood
	// starts once the daemon has gone and outlives its session.
	run(t, c, `setsid sh -c 'sleep 1; head -c 24000000 /dev/zero | tr "\0" x >/proc/`+"'$PPID'"+`/fd/1; echo; echo "[  9.9] the flood is over" >/proc/`+"'$PPID'"+`/fd/1' </dev/null >/dev/null 2>&1 &`)
	c.Close()
	b.Backend.(interface{ Close() }).Close() // the daemon goes

	var most int64
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		fi, err := os.Stat(console)
		if err == nil {
			most = max(most, fi.Size())
		}
		if strings.HasSuffix(fileEnd(t, console, 64), "[  9.9] the flood is over\n") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the guest's last words never reached the console (it holds %d bytes, at most %d)", fi.Size(), most)
		}
	}
	if most > consoleBound {
		t.Errorf("with no daemon the console file reached %d bytes while the guest wrote 24 MB; bound %d", most, consoleBound)
	}

	// The next daemon reaches the guest.
	b2, err := microvm.New(backend.Env{Dir: b.dir, Options: map[string]any{"vmm": "firecracker", "firecracker": b.fc, "start_timeout": 30}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b2.Close)
	if got := run(t, connect(t, b2, id), "echo still here"); got != "still here" {
		t.Fatalf("after the flood the guest answers %q", got)
	}

	// A Firecracker that writes much and ends at its start: the error quotes its last
	// line, and the file is bounded.
	script := filepath.Join(t.TempDir(), "firecracker")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nhead -c 12000000 /dev/zero | tr '\\0' x\necho\necho 'Error: the kernel would not load' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := fakeFirecracker(t, map[string]any{"firecracker": script})
	if err := bad.Create(ctx, spec(t, "bad")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bad.Destroy(context.Background(), "bad") })
	err = bad.Start(ctx, "bad")
	if err == nil || !strings.Contains(err.Error(), "Error: the kernel would not load") {
		t.Fatalf("Start of a Firecracker that ends at once: %v; want its last line", err)
	}
	if fi, err := os.Stat(filepath.Join(bad.dir, "bad", "console.log")); err != nil || fi.Size() > consoleBound {
		t.Errorf("the failed start's console: %v, %v; bound %d", fi.Size(), err, consoleBound)
	}
}

// fileEnd is the last n bytes of the file at path.
func fileEnd(t *testing.T, path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	data, _ := io.ReadAll(io.NewSectionReader(f, max(fi.Size()-n, 0), n))
	return string(data)
}
