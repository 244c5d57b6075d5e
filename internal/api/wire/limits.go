package wire

import (
	"fmt"
	"math"
)

// The smallest limits a sandbox may be given: below them the guest itself, with a
// shell and git, cannot run; and the smallest disk that holds a checkout.
const (
	MinCPUs        = 0.01
	MinMemoryBytes = int64(64 << 20)
	MinPids        = int64(64)
	MinDiskBytes   = int64(32 << 20)
)

// CheckLimits refuses limits that make no sense: negative, not a number, or so small that
// nothing could run. Zero means the default and is accepted. `paddock up` checks its
// flags with it before it asks the daemon, and the daemon every request it is given.
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

// CheckDisk refuses a disk limit that makes no sense: negative, or too small to hold a
// checkout. Zero means none and is accepted.
func CheckDisk(diskBytes int64) error {
	switch {
	case diskBytes < 0:
		return fmt.Errorf("disk must be positive, not %d bytes", diskBytes)
	case diskBytes != 0 && diskBytes < MinDiskBytes:
		return fmt.Errorf("disk must be at least %s, not %s", FormatBytes(MinDiskBytes), FormatBytes(diskBytes))
	}
	return nil
}
