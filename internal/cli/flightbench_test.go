package cli_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/daemon"
)

// BenchmarkFlightRecordExec weighs the flight recorder on an exec's round trip:
// `paddock exec NAME -- true` through two real daemons (run here, in-process) and their
// guests in bwrap sandboxes, one keeping flight records and one not, alternating in the
// same run, each first in turn. record-% is how much longer the exec took with the record. The guest is
// bin/paddock-guest (`make build`).
func BenchmarkFlightRecordExec(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	guest, err := filepath.Abs("../../bin/paddock-guest")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(guest); err != nil {
		b.Skip("no bin/paddock-guest: run make build")
	}
	b.Setenv("PADDOCK_GUEST_BINARY", guest)
	ctx := context.Background()
	run := func(on bool) func(args ...string) {
		home, err := os.MkdirTemp("", "pdk")
		if err != nil {
			b.Fatal(err)
		}
		os.Chmod(home, 0o711)
		p, err := config.ForHome(home)
		if err != nil {
			b.Fatal(err)
		}
		ready, stopped := make(chan struct{}), make(chan struct{})
		dctx, stop := context.WithCancel(ctx)
		go func() {
			defer close(stopped)
			daemon.Run(dctx, daemon.Options{Paths: p, Version: cli.Version, Logger: slog.New(slog.DiscardHandler),
				Ready: func() { close(ready) }, NoFlightRecord: !on})
		}()
		b.Cleanup(func() { // the daemon is this process: remove its sandbox, then stop it
			clitest.RemoveSandboxes(ctx, client.NewClient(p.Socket))
			stop()
			<-stopped
			os.RemoveAll(home)
		})
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			b.Fatal("the daemon did not start")
		}
		var errOut strings.Builder
		f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
		f.Paths = func() (config.Paths, error) { return p, nil }
		do := func(args ...string) {
			if code := cli.Run(ctx, f, args); code != 0 {
				b.Fatalf("paddock %v: %d %s", args, code, errOut.String())
			}
		}
		repo := filepath.Join(home, "repo")
		for _, args := range [][]string{{"init", "-q", "-b", "main", repo},
			{"-C", repo, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "--allow-empty", "-m", "init"}} {
			if o, err := exec.Command("git", args...).CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v %s", args, err, o)
			}
		}
		do("up", repo)
		return do
	}
	with, without := run(true), run(false)
	with("exec", "repo", "--", "true")
	without("exec", "repo", "--", "true")
	b.ResetTimer()
	var on, off time.Duration
	timed := func(do func(args ...string), sum *time.Duration) {
		start := time.Now()
		do("exec", "repo", "--", "true")
		*sum += time.Since(start)
	}
	for i := 0; i < b.N; i++ { // each first in turn
		if i%2 == 0 {
			timed(with, &on)
			timed(without, &off)
		} else {
			timed(without, &off)
			timed(with, &on)
		}
	}
	b.ReportMetric(float64(on.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(off.Nanoseconds())/float64(b.N), "no-record-ns/op")
	b.ReportMetric(100*(float64(on)/float64(off)-1), "record-%")
}
