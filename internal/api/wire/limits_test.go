package wire

import (
	"math"
	"testing"
)

func TestCheckLimits(t *testing.T) {
	for _, tc := range []struct {
		cpus      float64
		mem, pids int64
		ok        bool
	}{
		{0, 0, 0, true}, // the defaults
		{0.5, 64 << 20, 64, true},
		{-1, 0, 0, false},
		{math.NaN(), 0, 0, false},
		{math.Inf(1), 0, 0, false},
		{0.001, 0, 0, false},
		{0, -1, 0, false},
		{0, 1 << 20, 0, false},
		{0, 0, -5, false},
		{0, 0, 10, false},
	} {
		if err := CheckLimits(tc.cpus, tc.mem, tc.pids); (err == nil) != tc.ok {
			t.Errorf("CheckLimits(%v, %d, %d) = %v, want ok %v", tc.cpus, tc.mem, tc.pids, err, tc.ok)
		}
	}
}
