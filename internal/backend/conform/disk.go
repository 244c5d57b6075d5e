package conform

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/backend"
)

// diskBound is the disk limit of the disk check's sandbox, and diskFill what it tries to
// write into its workspace: four times the bound, so that what the host's filesystem
// loses tells a bound write (the bound at most) from an unbound one (all of it) even
// while other tests write beside it. Bound, the write stops at 64 MiB and is quick.
const (
	diskBound = int64(64 << 20)
	diskFill  = int64(256 << 20)
)

// testDiskFull makes a sandbox with a disk limit (backend.DiskLimiter), checks that the
// limit is reported as set and that /workspace is no bigger, then writes past it once
// (256 MiB into 64):
// the write must fail with ENOSPC, the host's filesystem must not have grown by what
// was written, and the sandbox and other, the suite's shared sandbox, must keep
// answering. Destroyed, it must leave nothing (no mount, loop device or image).
func testDiskFull(t T, h Harness, other *sandbox) {
	if !h.Backend.Describe().DiskLimit {
		t.Skipf("backend %s sets no disk limit (its description says so)", h.Backend.Name())
	}
	dl := h.Backend.(backend.DiskLimiter)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := dl.CanLimitDisk(ctx); err != nil {
		t.Skipf("%v", err)
	}
	id := NewID()
	spec := h.Spec(id)
	spec.DiskBytes = diskBound
	sb := startSpec(t, h, id, spec)
	if lr, ok := h.Backend.(backend.LimitReader); ok {
		l, err := lr.Limits(ctx, id)
		if err != nil {
			t.Fatalf("Limits: %v", err)
		}
		if l.DiskBytes != diskBound {
			t.Errorf("the backend reports a disk limit of %d bytes, want %d", l.DiskBytes, diskBound)
		}
	}
	size, err := strconv.ParseInt(sb.mustRun(t, "df -B1 --output=size /workspace | tail -n 1 | tr -d ' '"), 10, 64)
	if err != nil || size > diskBound {
		t.Fatalf("/workspace holds %d bytes (%v) with a disk limit of %d", size, err, diskBound)
	}

	hostDir := h.Dir
	if hostDir == "" {
		hostDir = os.TempDir()
	}
	// Others may write to the host's disk meanwhile (a test suite's other processes link
	// test binaries onto it): what is checked is that it did not take what the sandbox
	// wrote. Their writes only add to what the host loses, so the least of a few tries
	// is the sandbox's part; a sandbox that writes through to the host loses it each time.
	var grew int64
	for try := 0; try < 3; try++ {
		before := freeBytes(t, hostDir)
		code, _, errOut := sb.run(t, "rm -f /workspace/fill; head -c "+strconv.FormatInt(diskFill, 10)+" /dev/zero > /workspace/fill; s=$?; sync; exit $s")
		grew = before - freeBytes(t, hostDir)
		if code == 0 || !strings.Contains(errOut, "No space left on device") {
			t.Errorf("writing %d MiB into a /workspace of %d MiB: exit %d, %q; want ENOSPC", diskFill>>20, diskBound>>20, code, errOut)
		}
		if grew < diskFill*3/4 {
			break
		}
		t.Logf("try %d: the host's filesystem lost %d MiB meanwhile", try+1, grew>>20)
	}
	if grew >= diskFill*3/4 {
		t.Errorf("the host's filesystem (%s) lost %d MiB while the sandbox wrote %d MiB into a %d MiB workspace", hostDir, grew>>20, diskFill>>20, diskBound>>20)
	}
	t.Logf("the write stopped at the bound; the host's filesystem lost %d MiB meanwhile", grew>>20)
	if got := sb.mustRun(t, "rm -f /workspace/fill && echo alive"); got != "alive" {
		t.Errorf("the sandbox answered %q after its disk filled", got)
	}
	if got := other.mustRun(t, "echo alive"); got != "alive" {
		t.Errorf("another sandbox answered %q after one filled its disk", got)
	}

	sb.client.Close()
	if err := h.Backend.Destroy(ctx, id); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if h.Leftovers != nil {
		if left := h.Leftovers(id); len(left) > 0 {
			t.Errorf("a destroyed sandbox with a disk limit left on the host: %v", left)
		}
	}
}

// freeBytes is what unprivileged users may still write to the filesystem holding dir.
func freeBytes(t T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatalf("statfs %s: %v", dir, err)
	}
	return int64(st.Bavail) * st.Bsize
}
