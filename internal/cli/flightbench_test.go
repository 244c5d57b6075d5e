package cli_test

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/flightrec"
	"github.com/paddockhq/paddock/internal/store"
)

// BenchmarkFlightRecordExec weighs the flight recorder against what it records: each
// iteration runs `paddock exec NAME -- true` through the real daemon and guest (a bwrap
// sandbox), then has a recorder of its own, on a store of its own, record that exec as
// the daemon does: Add (all the exec's request waits for) and the writer's work for it
// (hash, line, write, the head in the store), alternating in the same run. inline-% and
// writer-% are those costs as a share of the exec round trip.
func BenchmarkFlightRecordExec(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	home, repo := benchHome(b)
	ctx := context.Background()
	var errOut strings.Builder
	f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
	if code := cli.Run(ctx, f, []string{"up", repo}); code != 0 {
		b.Fatalf("up: %d %s", code, errOut.String())
	}
	st, err := store.Open(ctx, filepath.Join(home, "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	rec, err := flightrec.New(flightrec.Options{Dir: filepath.Join(home, "benchrecords"), Heads: st})
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	entry := func() flightrec.Entry {
		return flightrec.Entry{Kind: flightrec.KindExec, Who: "local", Fields: map[string]string{
			"argv": `["true"]`, "exit": "0", "duration_ms": "12"}}
	}
	rec.Add("repo", entry())
	rec.Flush(ctx)
	b.ResetTimer()
	var execT, inline, writer time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if code := cli.Run(ctx, f, []string{"exec", "repo", "--", "true"}); code != 0 {
			b.Fatalf("exec: %d %s", code, errOut.String())
		}
		execT += time.Since(start)
		start = time.Now()
		rec.Add("repo", entry())
		inline += time.Since(start)
		rec.Flush(ctx)
		writer += time.Since(start)
	}
	b.ReportMetric(float64(execT.Nanoseconds())/float64(b.N), "exec-ns/op")
	b.ReportMetric(float64(inline.Nanoseconds())/float64(b.N), "inline-ns/op")
	b.ReportMetric(float64(writer.Nanoseconds())/float64(b.N), "writer-ns/op")
	b.ReportMetric(100*float64(inline)/float64(execT), "inline-%")
	b.ReportMetric(100*float64(writer)/float64(execT), "writer-%")
}
