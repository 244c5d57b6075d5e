package cli_test

import (
	"context"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/events"
)

// BenchmarkNotifyEvent measures how soon a session's status reaches a program following
// the daemon's event stream: from the moment `paddock guest notify` is asked to run inside
// a sandbox (an exec through the daemon's API) to its session-status event arriving on
// GET /v1/events. The baseline, in the same run, is the round trip of an exec of `true`
// through the same API, agent and sandbox. Each iteration also writes a status file
// through the Files API instead, which leaves out notify's own start-up: what remains is
// the push itself (inotify, the agent's stream, the daemon's record, the API stream).
func BenchmarkNotifyEvent(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	home, repo := benchHome(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errOut strings.Builder
	f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
	if code := cli.Run(ctx, f, []string{"up", repo}); code != 0 {
		b.Fatalf("up: %d %s", code, errOut.String())
	}
	paths, err := config.ForHome(home)
	if err != nil {
		b.Fatal(err)
	}
	c := client.NewClient(paths.Socket)

	arrived := make(chan events.Event, 16)
	go c.Events(ctx, wire.EventsQuery{Sandbox: "repo"}, func(ev events.Event) error {
		if ev.Kind == "session-status" && ev.Session == "bench" {
			arrived <- ev
		}
		return nil
	})
	run := func(argv ...string) {
		if code, err := c.Exec(ctx, "repo", wire.ExecRequest{Argv: argv}, wire.ExecIO{}); err != nil || code != 0 {
			b.Fatalf("exec %v: %d %v", argv, code, err)
		}
	}
	notify := func(status string) {
		run("/opt/paddock/bin/paddock", "guest", "notify", "--session", "bench", "--status", status)
	}
	wait := func(status string) {
		select {
		case ev := <-arrived:
			if ev.Attrs["status"] != status {
				b.Fatalf("event %+v, want status %s", ev, status)
			}
		case <-time.After(10 * time.Second):
			b.Fatalf("no session-status %s event", status)
		}
	}
	// Warm up: the stream is subscribed, the agent's watchers run, the binary is cached.
	notify("working")
	wait("working")
	run("true")

	var toEvent, notifyExec, fileToEvent, baseline []time.Duration
	statuses := []string{"idle", "working"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		status := statuses[i%2]
		start := time.Now()
		done := make(chan time.Duration, 1)
		go func() {
			notify(status)
			done <- time.Since(start)
		}()
		wait(status)
		toEvent = append(toEvent, time.Since(start))
		notifyExec = append(notifyExec, <-done)

		start = time.Now()
		if err := c.WriteFile(ctx, "repo", "/run/paddock/sessions/bench.json", 0o644, strings.NewReader(`{"status":"waiting"}`)); err != nil {
			b.Fatal(err)
		}
		wait("waiting")
		fileToEvent = append(fileToEvent, time.Since(start))

		start = time.Now()
		run("true")
		baseline = append(baseline, time.Since(start))
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	b.ReportMetric(ms(quantile(toEvent, 0.5)), "ms-median/event")
	b.ReportMetric(ms(quantile(toEvent, 0.95)), "ms-p95/event")
	b.ReportMetric(ms(quantile(notifyExec, 0.5)), "notify-exec-ms-median")
	b.ReportMetric(ms(quantile(fileToEvent, 0.5)), "file-write-ms-median/event")
	b.ReportMetric(ms(quantile(fileToEvent, 0.95)), "file-write-ms-p95/event")
	b.ReportMetric(ms(quantile(baseline, 0.5)), "baseline-ms-median/exec")
	b.ReportMetric(ms(quantile(baseline, 0.95)), "baseline-ms-p95/exec")
	b.ReportMetric(float64(quantile(toEvent, 0.5))/float64(quantile(baseline, 0.5)), "x-baseline")
}

// quantile is the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s)) + 0.5)
	return s[min(max(i-1, 0), len(s)-1)]
}
