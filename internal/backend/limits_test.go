package backend

import (
	"runtime"
	"testing"
)

func TestLimitsFor(t *testing.T) {
	def := LimitsFor(Spec{})
	if want := min(DefaultCPUs, float64(runtime.NumCPU())); def.CPUs != want {
		t.Errorf("default CPUs %v, want %v (4, at most the host's)", def.CPUs, want)
	}
	if want := min(DefaultMemoryBytes, HostMemory()); def.MemoryBytes != want || def.Pids != DefaultPids {
		t.Errorf("defaults %+v, want %d bytes and %d processes", def, want, DefaultPids)
	}
	huge := LimitsFor(Spec{CPUs: 1000, MemoryBytes: 1 << 60, PidsLimit: 1 << 40})
	if huge.CPUs != float64(runtime.NumCPU()) || huge.MemoryBytes != HostMemory() || huge.Pids >= 1<<40 {
		t.Errorf("limits above the host's were not clamped: %+v", huge)
	}
	if got := LimitsFor(Spec{CPUs: 0.5, MemoryBytes: 256 << 20, PidsLimit: 100}); got != (Limits{CPUs: 0.5, MemoryBytes: 256 << 20, Pids: 100}) {
		t.Errorf("limits within the host's changed: %+v", got)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{8 << 30: "8g", 512 << 20: "512m", 1536 << 10: "1536k", 1000: "1000"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %s, want %s", n, got, want)
		}
	}
}
