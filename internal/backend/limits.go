package backend

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// The default resource limits of a sandbox, on every backend that enforces limits; each is
// clamped to what the host has.
const (
	DefaultCPUs        = 4.0
	DefaultMemoryBytes = int64(8 << 30)
	DefaultPids        = int64(4096)
)

// Limits is wire.Limits (the API's wire type).
type Limits = wire.Limits

// LimitsFor returns the limits a sandbox made from spec gets: the spec's, or the default
// where it leaves one at zero, each clamped to what the host has.
func LimitsFor(spec Spec) Limits {
	l := Limits{CPUs: spec.CPUs, MemoryBytes: spec.MemoryBytes, Pids: spec.PidsLimit, DiskBytes: spec.DiskBytes}
	if l.CPUs <= 0 {
		l.CPUs = DefaultCPUs
	}
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	if l.Pids <= 0 {
		l.Pids = DefaultPids
	}
	return Clamp(l)
}

// Clamp lowers each limit to what the host has: its processors (those this process may
// run on), its memory, and its largest pid.
func Clamp(l Limits) Limits {
	l.CPUs = min(l.CPUs, float64(runtime.NumCPU()))
	if total := HostMemory(); total > 0 {
		l.MemoryBytes = min(l.MemoryBytes, total)
	}
	if pidMax := hostPidMax(); pidMax > 0 {
		l.Pids = min(l.Pids, pidMax)
	}
	return l
}

// HostMemory is the host's memory in bytes, from /proc/meminfo; 0 when unknown.
func HostMemory() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// hostPidMax is the kernel's largest pid, the most processes the host can have.
func hostPidMax() int64 {
	data, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// FormatBytes writes a size the way --memory takes it: 512m, 8g, 1536k.
func FormatBytes(n int64) string { return wire.FormatBytes(n) }

// LimitReader is implemented by backends that enforce resource limits.
type LimitReader interface {
	// Limits reads back the limits in force on a running sandbox from where they are
	// enforced (the kernel's cgroup files, the engine's container), so that what it
	// reports is what holds. A *LimitsNotEnforcedError says the sandbox runs without them.
	Limits(ctx context.Context, id ID) (Limits, error)
}

// LimitsNotEnforcedError says a sandbox runs without resource limits, why, and how to
// make them hold.
type LimitsNotEnforcedError struct {
	Reason string
	Fix    string
}

func (e *LimitsNotEnforcedError) Error() string {
	return "resource limits are not enforced: " + e.Reason
}

// ErrNotRunning is returned for an operation that needs a running sandbox.
var ErrNotRunning = errors.New("the sandbox is not running")

// Finding is wire.BackendFinding (the API's wire type).
type Finding = wire.BackendFinding

// Reporter is implemented by backends that have findings for `paddock doctor`.
type Reporter interface {
	Report(ctx context.Context) []Finding
}

// DiskLimiter is implemented by backends that can bound a sandbox's workspace on the
// host's disk (Spec.DiskBytes).
type DiskLimiter interface {
	// CanLimitDisk says whether a sandbox made now could have its disk bounded; an
	// error says why not and what would allow it, and no sandbox is made.
	CanLimitDisk(ctx context.Context) error
}

// DiskFinding is the doctor's "disk quota" finding for a backend whose workspaces live
// under dir, on a filesystem named fs: whether `up --disk` can bound them (can is nil)
// or why not.
func DiskFinding(dir string, can error, fs string) Finding {
	on := dir
	if fs != "" {
		on += " (" + fs + ")"
	}
	if can == nil {
		return Finding{Topic: "disk quota", OK: true,
			Text: "a sandbox made with `up --disk SIZE` gets a workspace of at most SIZE (an ext4 image loop-mounted at /workspace); " +
				"one made without can fill the filesystem that holds " + on}
	}
	f := Finding{Topic: "disk quota", Text: "`up --disk` is refused: " + can.Error() + "; a sandbox can fill the filesystem that holds " + on}
	var fixer interface{ FixText() string }
	if errors.As(can, &fixer) {
		f.Fix = fixer.FixText()
	}
	return f
}
