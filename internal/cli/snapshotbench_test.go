package cli_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/snapshot/storage/miniotest"
)

// BenchmarkSnapshot, in one run against one real MinIO on loopback:
//   - a first snapshot of a 200 MB workspace of 10,000 files (committed, as a project's
//     files are), against uploading the same tree with minio-go, a file an object, on as
//     many workers as cores (what mc mirror does);
//   - a second snapshot after one file changed (aim: under 1 s);
//   - restore to a first exec, against a fresh up of the same repository to a first exec.
func BenchmarkSnapshot(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	endpoint := miniotest.Start(b)
	miniotest.Bucket(b, endpoint, "snaps")
	miniotest.Bucket(b, endpoint, "mirror")
	b.Setenv("AWS_ACCESS_KEY_ID", miniotest.User)
	b.Setenv("AWS_SECRET_ACCESS_KEY", miniotest.Password)
	home, repo := benchHome(b)
	config := "[backup]\nstore = \"s3://snaps/paddock\"\nendpoint = \"" + endpoint + "\"\nkeep = 0\nmax_age = \"0\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		b.Fatal(err)
	}
	const files, size = 10000, 20 << 10
	buf := make([]byte, size)
	for i := 0; i < files; i++ {
		dir := filepath.Join(repo, fmt.Sprintf("d%02d", i%100))
		os.MkdirAll(dir, 0o755)
		rand.Read(buf)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.bin", i)), buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "-m", "tree"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	ctx := context.Background()
	paddock := func(args ...string) string {
		var out, errOut strings.Builder
		f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		if code := cli.Run(ctx, f, args); code != 0 {
			b.Fatalf("paddock %v: %d %s", args, code, errOut.String())
		}
		return out.String()
	}
	timed := func(fn func()) time.Duration {
		start := time.Now()
		fn()
		return time.Since(start)
	}
	mc, err := minio.New(strings.TrimPrefix(endpoint, "http://"), &minio.Options{Creds: credentials.NewStaticV4(miniotest.User, miniotest.Password, "")})
	if err != nil {
		b.Fatal(err)
	}
	mirror := func(prefix string) {
		paths := make(chan string)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failed error
		for range max(2, runtime.NumCPU()) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for p := range paths {
					rel, _ := filepath.Rel(repo, p)
					if _, err := mc.FPutObject(ctx, "mirror", prefix+"/"+rel, p, minio.PutObjectOptions{}); err != nil {
						mu.Lock()
						failed = err
						mu.Unlock()
					}
				}
			}()
		}
		filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && !strings.Contains(p, "/.git/") {
				paths <- p
			}
			return nil
		})
		close(paths)
		wg.Wait()
		if failed != nil {
			b.Fatal(failed)
		}
	}

	paddock("up", repo)
	var first, base, second, restore, up time.Duration
	for i := 0; i < b.N; i++ {
		// A first snapshot: the store holds nothing of this sandbox (a new name each time).
		name := fmt.Sprintf("s%d", i)
		paddock("up", repo, "--name", name)
		first += timed(func() { paddock("snapshot", name) })
		base += timed(func() { mirror(name) })
		paddock("exec", name, "--", "sh", "-c", fmt.Sprintf("echo change %d >> d00/f00000.bin", i))
		var id string
		second += timed(func() { id = strings.TrimSpace(paddock("snapshot", name)) })
		restore += timed(func() {
			paddock("restore", id, "--name", name+"-r")
			paddock("exec", name+"-r", "--", "true")
		})
		up += timed(func() {
			paddock("up", repo, "--name", name+"-u")
			paddock("exec", name+"-u", "--", "true")
		})
		for _, n := range []string{name, name + "-r", name + "-u"} {
			paddock("rm", n, "--force", "--purge")
		}
	}
	n := float64(b.N)
	b.ReportMetric(first.Seconds()/n, "snapshot-s")
	b.ReportMetric(base.Seconds()/n, "mirror-s")
	b.ReportMetric(first.Seconds()/base.Seconds(), "snapshot/mirror")
	b.ReportMetric(second.Seconds()/n, "second-snapshot-s")
	b.ReportMetric(restore.Seconds()/n, "restore-exec-s")
	b.ReportMetric(up.Seconds()/n, "up-exec-s")
	b.ReportMetric(restore.Seconds()/up.Seconds(), "restore/up")
	b.ReportMetric(0, "ns/op")
}
