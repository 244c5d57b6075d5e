package bwrap_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/bwrap"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/testenv"
)

// Each benchmark runs paddock's operation b.N times and the baseline b.N times in the same
// run, and reports both and their ratio: absolute times on a shared machine drift, the
// ratio much less.

func connectBench(b *testing.B, be backend.Backend, id backend.ID) *guestclient.Client {
	c, err := guestclient.New(context.Background(), func(ctx context.Context) (net.Conn, error) {
		return be.Dial(ctx, id)
	}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkCreateToFirstExec: Create, Start, connect and run `true`, with the small guest
// the daemon injects, against running `bwrap ... true` with the same namespaces.
func BenchmarkCreateToFirstExec(b *testing.B) {
	be, _ := newBackend(b)
	agent := smallGuest(b)
	ctx := context.Background()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		id := backend.ID(fmt.Sprintf("bench%d", i))
		start := time.Now()
		if err := be.Create(ctx, backend.Spec{ID: id, Name: "bench", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
			b.Fatal(err)
		}
		if err := be.Start(ctx, id); err != nil {
			b.Fatal(err)
		}
		c := connectBench(b, be, id)
		if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
			b.Fatalf("exec: %d %v", code, err)
		}
		ours += time.Since(start)
		c.Close()
		be.Destroy(ctx, id)

		start = time.Now()
		if out, err := be.BaselineCommand(ctx).CombinedOutput(); err != nil {
			b.Fatalf("baseline: %v %s", err, out)
		}
		base += time.Since(start)
	}
	backendtest.ReportRatio(b, ours, base)
}

func runningSandbox(b *testing.B) (*guestclient.Client, backend.Backend, backend.ID) {
	be, agent := newBackend(b)
	return runningSandboxWith(b, be, agent)
}

// runningSandboxWith is runningSandbox with the given guest binary.
func runningSandboxWith(b *testing.B, be backend.Backend, agent sandbox.GuestBinary) (*guestclient.Client, backend.Backend, backend.ID) {
	ctx := context.Background()
	id := backend.ID("benchrun")
	if err := be.Create(ctx, backend.Spec{ID: id, Name: "bench", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Destroy(context.Background(), id) })
	if err := be.Start(ctx, id); err != nil {
		b.Fatal(err)
	}
	c := connectBench(b, be, id)
	b.Cleanup(func() { c.Close() })
	return c, be, id
}

// BenchmarkExecRoundTrip: `true` through the guest against fork+exec of `true` on the host.
func BenchmarkExecRoundTrip(b *testing.B) {
	c, _, _ := runningSandbox(b)
	ctx := context.Background()
	c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}) // warm up
	b.ResetTimer()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
			b.Fatalf("exec: %d %v", code, err)
		}
		ours += time.Since(start)
		start = time.Now()
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
		base += time.Since(start)
	}
	backendtest.ReportRatio(b, ours, base)
}

// BenchmarkFileWriteRead: 64 MiB written into and read back from the sandbox through the
// guest, against the same bytes through a local pipe.
func BenchmarkFileWriteRead(b *testing.B) {
	c, _, _ := runningSandbox(b)
	ctx := context.Background()
	data := bytes.Repeat([]byte("paddock-benchmark-data-0123456789abcdef"), (64<<20)/39)
	b.SetBytes(int64(2 * len(data)))
	b.ResetTimer()
	var ours, base time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := c.WriteFile(ctx, "/workspace", "bench.bin", 0o644, false, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		if n, err := c.ReadFile(ctx, "/workspace", "bench.bin", io.Discard); err != nil || n != int64(len(data)) {
			b.Fatalf("read %d: %v", n, err)
		}
		ours += time.Since(start)
		start = time.Now()
		for range 2 {
			r, w, _ := os.Pipe()
			go func() { w.Write(data); w.Close() }()
			io.Copy(io.Discard, r)
			r.Close()
		}
		base += time.Since(start)
	}
	backendtest.ReportRatio(b, ours, base)
	mib := float64(2*len(data)*b.N) / (1 << 20)
	b.ReportMetric(mib/ours.Seconds(), "MiB/s")
	b.ReportMetric(mib/base.Seconds(), "baseline-MiB/s")
}

// BenchmarkIdleMemory reports the resident memory of one idle sandbox: its processes
// (bwrap, the namespace init, the guest) and the daemon-side heap of one guest connection,
// 14 s after its start and settled, 90 s after it;
// with the whole paddock as the guest (this test binary) and with the small guest
// (cmd/paddock-guest, built here), in the same run.
func BenchmarkIdleMemory(b *testing.B) {
	b.Run("whole", func(b *testing.B) {
		be, agent := newBackend(b)
		idleMemory(b, be, agent)
	})
	b.Run("small", func(b *testing.B) {
		be, _ := newBackend(b)
		idleMemory(b, be, smallGuest(b))
	})
}

// smallGuest is the small guest (cmd/paddock-guest), what the daemon injects when `make
// build` put it beside paddock, installed where the sandbox uid reaches it.
func smallGuest(b *testing.B) sandbox.GuestBinary {
	path, err := testenv.SmallGuest()
	if err != nil {
		b.Fatal(err)
	}
	agent, err := sandbox.InstallGuest(path, filepath.Join(testenv.ShortTempDir(b), "agent"))
	if err != nil {
		b.Fatal(err)
	}
	return agent
}

func idleMemory(b *testing.B, be backend.Backend, agent sandbox.GuestBinary) {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, _, id := runningSandboxWith(b, be, agent)
	// The daemon watches every running sandbox's events; with nothing happening the
	// guest's watchers slow to their idle pace, about 12 s after the last change.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := c.Events(ctx)
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for range events {
		}
	}()
	started := time.Now()
	_, startedAnon := processesRSS(string(id))
	time.Sleep(14 * time.Second)
	info, err := c.Info(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	daemonShare := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
	rss, anon := processesRSS(string(id))
	sandboxRSS, sandboxAnon := float64(rss)/(1<<20), float64(anon)/(1<<20)
	// Settled: past the guest's first collection at the idle pace (see releaseLooks in
	// internal/guest), after which its looks' garbage no longer piles up.
	time.Sleep(time.Until(started.Add(90 * time.Second)))
	settledRSS, settledAnon := processesRSS(string(id))
	for i := 0; i < b.N; i++ {
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(info.RssBytes)/(1<<20), "agent-MiB")
	b.ReportMetric(sandboxRSS, "sandbox-processes-MiB")
	b.ReportMetric(daemonShare, "daemon-share-MiB")
	b.ReportMetric(sandboxRSS+daemonShare, "total-MiB")
	// Private memory: what each further sandbox adds. The agent's code pages are one
	// file shared by every sandbox's guest, so they count once, not per sandbox.
	b.ReportMetric(float64(startedAnon)/(1<<20), "started-sandbox-private-MiB")
	b.ReportMetric(sandboxAnon, "sandbox-private-MiB")
	b.ReportMetric(sandboxAnon+daemonShare, "total-private-MiB")
	b.ReportMetric(float64(settledRSS)/(1<<20)+daemonShare, "settled-total-MiB")
	b.ReportMetric(float64(settledAnon)/(1<<20)+daemonShare, "settled-private-MiB")
}

// processesRSS sums VmRSS and RssAnon of every host process of the sandbox.
func processesRSS(id string) (rss, anon int64) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		environ, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !(strings.Contains(string(environ), "PADDOCK_SANDBOX_ID="+id) || strings.Contains(string(cmdline), "/"+id+"/")) {
			continue
		}
		status, _ := os.ReadFile("/proc/" + e.Name() + "/status")
		for _, line := range strings.Split(string(status), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "VmRSS:":
				rss += kb << 10
			case "RssAnon:":
				anon += kb << 10
			}
		}
	}
	return rss, anon
}

// BenchmarkLimits measures what limits cost: create to first exec, and an exec round
// trip, in sandboxes with their cgroup and sized mounts against the same without them
// (today's sandbox before limits), alternating in the same run. The aim is under 10%.
func BenchmarkLimits(b *testing.B) {
	pair := func(b *testing.B) (*bwrap.Bwrap, *bwrap.Bwrap, sandbox.GuestBinary) {
		limited, agent := newBackend(b)
		plain, _ := newBackend(b)
		plain.DisableLimits()
		return limited, plain, agent
	}
	b.Run("CreateToFirstExec", func(b *testing.B) { compareCreateToFirstExec(b, pair) })
	b.Run("ExecRoundTrip", func(b *testing.B) { compareExec(b, pair, []string{"true"}) })
}

// BenchmarkSeccomp measures what the seccomp filter costs: create to first exec, an exec
// round trip, and a process making 400,000 system calls (half getppid, which the kernel
// answers from its cache of calls the filter allows whatever their arguments, half an
// ioctl, whose request the filter must read each time), in sandboxes with the filter
// against the same without it, alternating in the same run.
func BenchmarkSeccomp(b *testing.B) {
	pair := func(b *testing.B) (*bwrap.Bwrap, *bwrap.Bwrap, sandbox.GuestBinary) {
		filtered, agent := newBackend(b)
		plain, _ := newBackend(b)
		plain.DisableSeccomp()
		return filtered, plain, agent
	}
	b.Run("CreateToFirstExec", func(b *testing.B) { compareCreateToFirstExec(b, pair) })
	b.Run("ExecRoundTrip", func(b *testing.B) { compareExec(b, pair, []string{"true"}) })
	syscalls := fmt.Sprintf(`my $buf = "\0" x 64; for (1..200000) { syscall(%d); syscall(%d, 0, %d, $buf) }`,
		unix.SYS_GETPPID, unix.SYS_IOCTL, unix.TCGETS)
	b.Run("Syscalls", func(b *testing.B) { compareExec(b, pair, []string{"perl", "-e", syscalls}) })
}

// backendPair returns the backend measured, the baseline's and the guest both run.
type backendPair func(b *testing.B) (ours, baseline *bwrap.Bwrap, agent sandbox.GuestBinary)

// compareCreateToFirstExec times Create, Start, connect and `exec true` on both backends,
// alternating which goes first.
func compareCreateToFirstExec(b *testing.B, pair backendPair) {
	ours, baseline, agent := pair(b)
	ctx := context.Background()
	once := func(be *bwrap.Bwrap, id backend.ID) time.Duration {
		start := time.Now()
		if err := be.Create(ctx, backend.Spec{ID: id, Name: "bench", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
			b.Fatal(err)
		}
		if err := be.Start(ctx, id); err != nil {
			b.Fatal(err)
		}
		c := connectBench(b, be, id)
		if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
			b.Fatalf("exec: %d %v", code, err)
		}
		d := time.Since(start)
		c.Close()
		if err := be.Destroy(ctx, id); err != nil {
			b.Fatal(err)
		}
		return d
	}
	var with, without time.Duration
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("cmp%d", i)
		if i%2 == 0 {
			with += once(ours, backend.ID(id+"a"))
			without += once(baseline, backend.ID(id+"b"))
		} else {
			without += once(baseline, backend.ID(id+"b"))
			with += once(ours, backend.ID(id+"a"))
		}
	}
	backendtest.ReportRatio(b, with, without)
}

// compareExec times argv run through the guest of a running sandbox of each backend,
// alternating which goes first.
func compareExec(b *testing.B, pair backendPair, argv []string) {
	ours, baseline, agent := pair(b)
	ctx := context.Background()
	// Distinct IDs: sandboxes' cgroups are named after them, beneath one parent.
	client := func(be *bwrap.Bwrap, id backend.ID) *guestclient.Client {
		if err := be.Create(ctx, backend.Spec{ID: id, Name: "bench", GuestBinary: agent.Path, GuestSHA256: agent.SHA256}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { be.Destroy(context.Background(), id) })
		if err := be.Start(ctx, id); err != nil {
			b.Fatal(err)
		}
		c := connectBench(b, be, id)
		b.Cleanup(func() { c.Close() })
		c.Exec(ctx, guestclient.ExecOptions{Argv: argv}) // warm up
		return c
	}
	withC, withoutC := client(ours, "benchcmp1"), client(baseline, "benchcmp2")
	run := func(c *guestclient.Client) time.Duration {
		start := time.Now()
		var errOut strings.Builder
		if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: argv, Stderr: &errOut}); err != nil || code != 0 {
			b.Fatalf("exec %q: %d %v %s", argv, code, err, errOut.String())
		}
		return time.Since(start)
	}
	b.ResetTimer()
	var with, without time.Duration
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			with += run(withC)
			without += run(withoutC)
		} else {
			without += run(withoutC)
			with += run(withC)
		}
	}
	backendtest.ReportRatio(b, with, without)
}
