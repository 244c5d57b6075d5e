package backendtest

import (
	"testing"
	"time"
)

// ReportRatio reports a benchmark's time per operation, its baseline's, measured in the
// same run, and their ratio: absolute times on a shared machine drift, the ratio much
// less.
func ReportRatio(b *testing.B, ours, baseline time.Duration) {
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(baseline.Nanoseconds())/float64(b.N), "baseline-ns/op")
	b.ReportMetric(float64(ours)/float64(baseline), "x-baseline")
}
