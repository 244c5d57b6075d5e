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
)

// history writes n commits into repo with git fast-import, each changing one of 100 files.
func history(b *testing.B, repo string, n int) {
	var in strings.Builder
	for i := 1; i <= n; i++ {
		body := fmt.Sprintf("line %d of file %d\n", i, i%100)
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter B <b@example.com> %d +0000\ndata 8\ncommit %d\n", 1700000000+i, i%10)
		if i > 1 {
			fmt.Fprintf(&in, "from refs/heads/main^0\n")
		}
		fmt.Fprintf(&in, "M 644 inline src/file%03d.txt\ndata %d\n%s\n", i%100, len(body), body)
	}
	cmd := exec.Command("git", "-C", repo, "fast-import", "--quiet")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v %s", err, out)
	}
	if out, err := exec.Command("git", "-C", repo, "reset", "-q", "--hard", "main").CombinedOutput(); err != nil {
		b.Fatalf("reset: %v %s", err, out)
	}
}

// touch20 is a script that commits a change to 20 files.
const touch20 = `set -e; for f in $(seq 0 19); do echo "change $1" >> src/file0$(printf %02d $f).txt; done; git add -A; git -c user.name=b -c user.email=b@example.com commit -q -m "change $1"`

// BenchmarkSync: `paddock sync` of one new commit touching 20 files, in a repository of
// 1000 commits, against `git fetch` of the same kind of commit from a local file:// clone,
// in the same run. Also the throughput of `sync --files` for a 100 MB untracked binary,
// against copying the same file on the host.
func BenchmarkSync(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	home, repo := benchHome(b)
	history(b, repo, 1000)
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
		paddock("exec", "repo", "--", "sh", "-c", touch20, "sh", fmt.Sprint(i))
		sh(upstream, touch20, fmt.Sprint(i))
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
