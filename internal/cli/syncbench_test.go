package cli_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/testenv"
)

// BenchmarkSync: `paddock sync` of one new commit touching 20 files, in a repository of
// 1000 commits, against `git fetch` of the same kind of commit from a local file:// clone,
// in the same run. Also the throughput of `sync --files` for a 100 MB untracked binary,
// against copying the same file on the host.
func BenchmarkSync(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	home, repo := benchHome(b)
	testenv.History(b, repo, 1000)
	ctx := context.Background()
	paddock := func(args ...string) {
		var errOut strings.Builder
		f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
		if code := cli.Run(ctx, f, args); code != 0 {
			b.Fatalf("paddock %v: %d %s", args, code, errOut.String())
		}
	}
	sh := func(dir, script string, args ...string) {
		cmd := exec.Command("sh", append([]string{"-c", script, "sh"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v %s", script, err, out)
		}
	}
	paddock("up", repo)
	paddock("sync", "repo")
	upstream := filepath.Join(home, "upstream")
	sh(home, `git clone -q "file://$1" "$2"`, repo, upstream)
	sh(repo, `git fetch -q "file://$1" main:refs/baseline/main`, upstream)

	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		paddock("exec", "repo", "--", "sh", "-c", testenv.Touch20, "sh", fmt.Sprint(i))
		sh(upstream, testenv.Touch20, fmt.Sprint(i))
		start := time.Now()
		paddock("sync", "repo")
		ours += time.Since(start)
		start = time.Now()
		sh(repo, `git fetch -q "file://$1" main:refs/baseline/main`, upstream)
		base += time.Since(start)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N)/1e6, "ms/sync")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N)/1e6, "baseline-ms/fetch")
	b.ReportMetric(float64(ours)/float64(base), "x-baseline")

	// 100 MB of untracked binary out with --files.
	paddock("exec", "repo", "--", "sh", "-c", "head -c 104857600 /dev/urandom > /workspace/big.bin")
	start := time.Now()
	paddock("sync", "repo", "--files", "big.bin", "--force")
	files := time.Since(start)
	start = time.Now()
	sh(repo, `cp big.bin big.copy && sync -f big.copy && rm big.copy`)
	cp := time.Since(start)
	if fi, err := os.Stat(filepath.Join(repo, "big.bin")); err != nil || fi.Size() != 100<<20 {
		b.Fatalf("big.bin on the host: %v %v", fi, err)
	}
	b.ReportMetric(100/files.Seconds(), "files-MiB/s")
	b.ReportMetric(100/cp.Seconds(), "baseline-cp-MiB/s")
}
