package docker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/docker"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/sandbox"
)

// benchBackend is the backend as the daemon makes it: with its own directory, so that its
// sandboxes are reached through their direct channel (this runs as root on a local engine).
func benchBackend(b *testing.B) (*docker.Docker, sandbox.GuestBinary) {
	return benchBackendIn(b, b.TempDir())
}

// benchBackendIn makes the backend with dir as its directory; with none, its sandboxes are
// reached through the exec bridge, as those of a remote engine are.
func benchBackendIn(b *testing.B, dir string) (*docker.Docker, sandbox.GuestBinary) {
	d, err := docker.New(backend.Env{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Available(context.Background()); err != nil {
		b.Skipf("docker is not available: %v", err)
	}
	return d, smallGuest(b)
}

func ratio(b *testing.B, ours, base time.Duration, unit string) {
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N)/1e6, "ms/"+unit)
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N)/1e6, "baseline-ms/"+unit)
	b.ReportMetric(float64(ours)/float64(base), "x-baseline")
}

func dockerCLI(b *testing.B, args ...string) {
	if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
		b.Fatalf("docker %v: %v %s", args, err, out)
	}
}

// BenchmarkCreateToFirstExec: Create + Start + connect + `exec true`, against
// `docker run --rm IMAGE true`, in the same run. One sandbox made before the timing pays
// what a daemon pays once, for its first sandbox: the check of the guest's volume.
func BenchmarkCreateToFirstExec(b *testing.B) {
	d, agent := benchBackend(b)
	createToFirstExec(b, d, agent, "")
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		ours += createToFirstExec(b, d, agent, "")
		start := time.Now()
		dockerCLI(b, "run", "--rm", "--network", "none", docker.DefaultImage, "true")
		base += time.Since(start)
	}
	ratio(b, ours, base, "create")
}

// BenchmarkRunscCreateToFirstExec: the same under gVisor (runsc), against the same under
// the engine's default runtime (runc), in the same run.
func BenchmarkRunscCreateToFirstExec(b *testing.B) {
	d, agent := benchBackend(b)
	requireRunsc(b, d)
	createToFirstExec(b, d, agent, "")
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		ours += createToFirstExec(b, d, agent, docker.Runsc)
		base += createToFirstExec(b, d, agent, "")
	}
	ratio(b, ours, base, "create")
}

// createToFirstExec times Create + Start + connect + `exec true` of a new sandbox under
// runtime, then removes it.
func createToFirstExec(b *testing.B, d *docker.Docker, agent sandbox.GuestBinary, runtime string) time.Duration {
	ctx := context.Background()
	id := backend.ID(fmt.Sprintf("bench%d", time.Now().UnixNano()%10000000))
	start := time.Now()
	if err := d.Create(ctx, backend.Spec{ID: id, Name: "bench", Runtime: runtime, GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
		b.Fatal(err)
	}
	defer d.Destroy(ctx, id)
	if err := d.Start(ctx, id); err != nil {
		b.Fatal(err)
	}
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return d.Dial(ctx, id) }, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
		b.Fatalf("exec: %d %v", code, err)
	}
	return time.Since(start)
}

// requireRunsc skips the benchmark when the engine has no runsc.
func requireRunsc(b *testing.B, d *docker.Docker) {
	if err := d.CheckRuntime(context.Background(), docker.Runsc, false); err != nil {
		b.Skipf("runsc: %v", err)
	}
}

func running(b *testing.B) (*guestclient.Client, string) {
	d, agent := benchBackend(b)
	return runningUnder(b, d, agent, "")
}

// runningUnder starts a sandbox under runtime for the rest of the benchmark.
func runningUnder(b *testing.B, d *docker.Docker, agent sandbox.GuestBinary, runtime string) (*guestclient.Client, string) {
	ctx := context.Background()
	id := backend.ID(fmt.Sprintf("benchrun%d", time.Now().UnixNano()%10000000))
	if err := d.Create(ctx, backend.Spec{ID: id, Name: "bench", Runtime: runtime, GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Destroy(context.Background(), id) })
	if err := d.Start(ctx, id); err != nil {
		b.Fatal(err)
	}
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return d.Dial(ctx, id) }, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c, "paddock-" + string(id)
}

// BenchmarkExecRoundTrip: `true` through the guest, against `docker exec CONTAINER true`.
func BenchmarkExecRoundTrip(b *testing.B) {
	c, name := running(b)
	ctx := context.Background()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
			b.Fatalf("exec: %d %v", code, err)
		}
		ours += time.Since(start)
		start = time.Now()
		dockerCLI(b, "exec", name, "true")
		base += time.Since(start)
	}
	ratio(b, ours, base, "exec")
}

// BenchmarkRunscExecRoundTrip: `true` through the guest of a sandbox under gVisor
// (runsc), against the same in one under runc, in the same run.
func BenchmarkRunscExecRoundTrip(b *testing.B) {
	d, agent := benchBackend(b)
	requireRunsc(b, d)
	gv, _ := runningUnder(b, d, agent, docker.Runsc)
	rc, _ := runningUnder(b, d, agent, "")
	ctx := context.Background()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		for _, run := range []struct {
			c   *guestclient.Client
			sum *time.Duration
		}{{gv, &ours}, {rc, &base}} {
			start := time.Now()
			if code, err := run.c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
				b.Fatalf("exec: %d %v", code, err)
			}
			*run.sum += time.Since(start)
		}
	}
	ratio(b, ours, base, "exec")
}

// BenchmarkRunscGitCommit: a workload inside, `git init` and a commit of 200 files,
// under gVisor against runc, in the same run: the cost of gVisor's system calls.
func BenchmarkRunscGitCommit(b *testing.B) {
	d, agent := benchBackend(b)
	requireRunsc(b, d)
	gv, _ := runningUnder(b, d, agent, docker.Runsc)
	rc, _ := runningUnder(b, d, agent, "")
	ctx := context.Background()
	script := `d=$(mktemp -d /workspace/g.XXXXXX) && cd "$d" && git init -q && for i in $(seq 200); do echo "$i" > "f$i"; done && git add . && git -c user.name=b -c user.email=b@b commit -q -m x && cd / && rm -rf "$d"`
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		for _, run := range []struct {
			c   *guestclient.Client
			sum *time.Duration
		}{{gv, &ours}, {rc, &base}} {
			start := time.Now()
			var out strings.Builder
			if code, err := run.c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out}); err != nil || code != 0 {
				b.Fatalf("git: %d %v %s", code, err, out.String())
			}
			*run.sum += time.Since(start)
		}
	}
	ratio(b, ours, base, "commit")
}

// BenchmarkFileWrite: 64 MiB into the container through the guest, against
// `docker exec -i CONTAINER sh -c 'cat > FILE'`.
func BenchmarkFileWrite(b *testing.B) {
	c, name := running(b)
	fileWrite(b, c, name)
}

// BenchmarkFileWriteBridge: the same through the exec bridge, the channel of sandboxes of
// a remote engine.
func BenchmarkFileWriteBridge(b *testing.B) {
	d, agent := benchBackendIn(b, "")
	c, name := runningUnder(b, d, agent, "")
	fileWrite(b, c, name)
}

// fileWrite times each write from a clean page cache: the guest syncs what it writes,
// and on ext4 (data=ordered) that sync also writes out the data other files left dirty,
// so without the untimed sync() the guest's write paid for the baseline's 64 MiB, which
// `cat` leaves unsynced.
func fileWrite(b *testing.B, c *guestclient.Client, name string) {
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		syscall.Sync()
		start := time.Now()
		if _, err := c.WriteFile(ctx, "/workspace", "bench.bin", 0o644, false, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		syscall.Sync()
		start = time.Now()
		cmd := exec.Command("docker", "exec", "-i", name, "sh", "-c", "cat > /workspace/bench2.bin")
		cmd.Stdin = bytes.NewReader(data)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("docker exec cat: %v %s", err, out)
		}
		base += time.Since(start)
	}
	reportThroughput(b, len(data), ours, base)
}

// BenchmarkFileRead: 64 MiB out of the container through the guest, against
// `docker exec CONTAINER cat FILE`.
func BenchmarkFileRead(b *testing.B) {
	c, name := running(b)
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	if _, err := c.WriteFile(ctx, "/workspace", "bench.bin", 0o644, false, bytes.NewReader(data)); err != nil {
		b.Fatal(err)
	}
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		n, err := c.ReadFile(ctx, "/workspace", "bench.bin", io.Discard)
		if err != nil || n != int64(len(data)) {
			b.Fatalf("read: %d bytes, %v", n, err)
		}
		ours += time.Since(start)
		start = time.Now()
		cmd := exec.Command("docker", "exec", name, "cat", "/workspace/bench.bin")
		var out countWriter
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil || int(out) != len(data) {
			b.Fatalf("docker exec cat: %d bytes, %v", out, err)
		}
		base += time.Since(start)
	}
	reportThroughput(b, len(data), ours, base)
}

// countWriter counts what is written to it.
type countWriter int

func (w *countWriter) Write(p []byte) (int, error) {
	*w += countWriter(len(p))
	return len(p), nil
}

// reportThroughput reports MiB/s of ours and of the baseline, and how many times faster
// ours is.
func reportThroughput(b *testing.B, size int, ours, base time.Duration) {
	mib := float64(size*b.N) / (1 << 20)
	b.ReportMetric(mib/ours.Seconds(), "MiB/s")
	b.ReportMetric(mib/base.Seconds(), "baseline-MiB/s")
	b.ReportMetric(float64(base)/float64(ours), "x-faster")
}
