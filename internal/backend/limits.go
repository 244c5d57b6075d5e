package backend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// The default resource limits of a sandbox, on every backend that enforces limits; each is
// clamped to what the host has.
const (
	DefaultCPUs        = 4.0
	DefaultMemoryBytes = int64(8 << 30)
	DefaultPids        = int64(4096)
)

// The smallest limits a sandbox may be given: below them the guest itself, with a
// shell and git, cannot run.
const (
	MinCPUs        = 0.01
	MinMemoryBytes = int64(64 << 20)
	MinPids        = int64(64)
)

// Limits are the resource limits of a sandbox: at most CPUs processors' worth of time,
// MemoryBytes of memory (and no swap beyond it), Pids processes and threads.
type Limits struct {
	CPUs        float64 `json:"cpus"`
	MemoryBytes int64   `json:"memory_bytes"`
	Pids        int64   `json:"pids"`
}

func (l Limits) String() string {
	return fmt.Sprintf("%s CPUs, %s memory, %d processes", strconv.FormatFloat(l.CPUs, 'f', -1, 64), FormatBytes(l.MemoryBytes), l.Pids)
}

// CheckLimits refuses limits that make no sense: negative, not a number, or so small that
// nothing could run. Zero means the default and is accepted.
func CheckLimits(cpus float64, memoryBytes, pids int64) error {
	switch {
	case math.IsNaN(cpus) || math.IsInf(cpus, 0) || cpus < 0:
		return fmt.Errorf("cpus must be a positive number, not %v", cpus)
	case cpus != 0 && cpus < MinCPUs:
		return fmt.Errorf("cpus must be at least %v, not %v", MinCPUs, cpus)
	case memoryBytes < 0:
		return fmt.Errorf("memory must be positive, not %d bytes", memoryBytes)
	case memoryBytes != 0 && memoryBytes < MinMemoryBytes:
		return fmt.Errorf("memory must be at least %s, not %s", FormatBytes(MinMemoryBytes), FormatBytes(memoryBytes))
	case pids < 0:
		return fmt.Errorf("pids must be positive, not %d", pids)
	case pids != 0 && pids < MinPids:
		return fmt.Errorf("pids must be at least %d, not %d", MinPids, pids)
	}
	return nil
}

// LimitsFor returns the limits a sandbox made from spec gets: the spec's, or the default
// where it leaves one at zero, each clamped to what the host has.
func LimitsFor(spec Spec) Limits {
	l := Limits{CPUs: spec.CPUs, MemoryBytes: spec.MemoryBytes, Pids: spec.PidsLimit}
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
func FormatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

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

// Finding is one thing a backend says about this host in `paddock doctor`, beyond whether
// it runs at all: a protection it enforces here, or one it cannot, and how to fix that.
type Finding struct {
	// Topic names what it is about: "limits", "disk quota".
	Topic string `json:"topic"`
	// OK is false when the protection does not hold here.
	OK   bool   `json:"ok"`
	Text string `json:"text"`
	Fix  string `json:"fix,omitempty"`
}

// Reporter is implemented by backends that have findings for `paddock doctor`.
type Reporter interface {
	Report(ctx context.Context) []Finding
}
