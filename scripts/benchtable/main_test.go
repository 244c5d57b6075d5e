package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/paddockhq/paddock/internal/cli
BenchmarkSync-2   	      10	 886835261 ns/op	       113.1 files-MiB/s	       500 baseline-cp-MiB/s	       303.2 ms/sync	         5.715 x-baseline
BenchmarkContextExec-2   	      30	 8000000 ns/op	         2.6 x-baseline
pkg: github.com/paddockhq/paddock/internal/backend/bwrap
BenchmarkIdleMemory/small-2    1   5 ns/op   16.0 total-MiB
PASS
`

// TestReport: a figure more than 25% worse in its own direction is flagged, one better
// or within 25% is not, one not run says so, and sub-benchmarks and packages match.
func TestReport(t *testing.T) {
	measured, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	figures := []figure{
		{pkg: "internal/cli", bench: "BenchmarkSync", metric: "x-baseline", committed: 6.3, what: "sync ratio"},
		{pkg: "internal/cli", bench: "BenchmarkSync", metric: "files-MiB/s / baseline-cp-MiB/s", committed: 0.83, higherIsBetter: true, what: "files throughput"},
		{pkg: "internal/cli", bench: "BenchmarkContextExec", metric: "x-baseline", committed: 2.0, what: "context exec"},
		{pkg: "internal/backend/bwrap", bench: "BenchmarkIdleMemory/small", metric: "total-MiB", committed: 16.1, what: "idle memory"},
		{pkg: "internal/backend/docker", bench: "BenchmarkFileWrite", metric: "x-faster", committed: 0.9, higherIsBetter: true, what: "docker files"},
	}
	var out strings.Builder
	flags := report(&out, figures, measured)
	if flags != 2 {
		t.Errorf("flagged %d, want 2 (throughput 73%% lower, context exec 30%% higher):\n%s", flags, out.String())
	}
	want := map[string]string{
		"sync ratio":       "9% better",
		"files throughput": "73% worse  FLAG", // 113/500 = 0.226 against 0.83
		"context exec":     "30% worse  FLAG",
		"idle memory":      "1% better",
		"docker files":     "not run",
	}
	for _, line := range strings.Split(out.String(), "\n") {
		for what, w := range want {
			if strings.HasPrefix(line, what) {
				if !strings.Contains(line, w) {
					t.Errorf("%s: %q lacks %q", what, line, w)
				}
				delete(want, what)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v\n%s", want, out.String())
	}
}

// TestFiguresFile: the committed figures file reads.
func TestFiguresFile(t *testing.T) {
	figures, err := readFigures("../../docs/benchmarks.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if len(figures) < 20 {
		t.Fatalf("only %d figures", len(figures))
	}
}
