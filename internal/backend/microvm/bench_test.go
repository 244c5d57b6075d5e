package microvm_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/bwrap"
	"github.com/paddockhq/paddock/internal/backend/microvm"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/testenv"
)

// Each benchmark runs the operation on a microVM and, as its baseline in the same run,
// on a bwrap sandbox with the same guest, and reports both and their ratio: absolute
// times on a shared machine drift, the ratio much less.

// baseline is a backend and the guest binary its sandboxes get.
type baseline struct {
	backend.Backend
	agent string
}

// bwrapBackend is the baseline: a bwrap backend in a short directory (its sockets), with
// the same guest installed where bwrap's sandbox user can read it.
func bwrapBackend(b *testing.B) baseline {
	dir, err := os.MkdirTemp("", "pdkmv")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	// Searchable by the unprivileged uid bwrap's sandboxes run as under root.
	if err := os.Chmod(dir, 0o711); err != nil {
		b.Fatal(err)
	}
	be, err := bwrap.New(backend.Env{Dir: filepath.Join(dir, "sb")})
	if err != nil {
		b.Fatal(err)
	}
	if err := be.Available(context.Background()); err != nil {
		testenv.Missing(b, fmt.Sprintf("bwrap, the benchmarks' baseline (%v)", err), "apt-get install bubblewrap")
	}
	agent, err := sandbox.InstallGuest(guest(b), filepath.Join(dir, "agent"))
	if err != nil {
		b.Fatal(err)
	}
	return baseline{be, agent.Path}
}

// guestOf is the guest binary of be's sandboxes.
func guestOf(b *testing.B, be backend.Backend) string {
	if base, ok := be.(baseline); ok {
		return base.agent
	}
	return guest(b)
}

func connectBench(b *testing.B, be backend.Backend, id backend.ID) *guestclient.Client {
	c, err := guestclient.New(context.Background(), func(ctx context.Context) (net.Conn, error) { return be.Dial(ctx, id) }, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// createToExec makes, starts and connects to a sandbox, runs `true`, and returns how
// long that took; the sandbox is destroyed after.
func createToExec(b *testing.B, be backend.Backend, id backend.ID) time.Duration {
	return createToExecNet(b, be, id, false)
}

// createToExecNet is createToExec with the network asked for: open or closed.
func createToExecNet(b *testing.B, be backend.Backend, id backend.ID, open bool) time.Duration {
	ctx := context.Background()
	start := time.Now()
	sp := spec(b, id)
	sp.GuestBinary = guestOf(b, be)
	sp.OpenNetwork = open
	if err := be.Create(ctx, sp); err != nil {
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
	be.Destroy(ctx, id)
	return d
}

// BenchmarkCreateToFirstExec: a microVM made, booted and answering its first exec
// (under TCG where KVM does not work), against a bwrap sandbox's.
func BenchmarkCreateToFirstExec(b *testing.B) {
	vm, base := newBackend(b, nil), bwrapBackend(b)
	createToExec(b, vm, "warm") // the root file system, kernel and initramfs, made once
	b.ResetTimer()
	var ours, baseline time.Duration
	for i := 0; i < b.N; i++ {
		ours += createToExec(b, vm, backend.ID(fmt.Sprintf("bench%d", i)))
		baseline += createToExec(b, base, backend.ID(fmt.Sprintf("base%d", i)))
	}
	backendtest.ReportRatio(b, ours, baseline)
}

// BenchmarkCreateToFirstExecOpenNetwork: a microVM with --network open (a user-mode
// network device, its driver loaded and the interface configured at boot) up to its
// first exec, against a closed one's in the same run.
func BenchmarkCreateToFirstExecOpenNetwork(b *testing.B) {
	vm := newBackend(b, nil)
	createToExecNet(b, vm, "warm", true)
	b.ResetTimer()
	var ours, baseline time.Duration
	for i := 0; i < b.N; i++ {
		ours += createToExecNet(b, vm, backend.ID(fmt.Sprintf("open%d", i)), true)
		baseline += createToExecNet(b, vm, backend.ID(fmt.Sprintf("closed%d", i)), false)
	}
	backendtest.ReportRatio(b, ours, baseline)
}

// BenchmarkCreateToFirstExecCPU: a microVM with the default processor model under TCG
// ("max": every instruction QEMU emulates, AVX2 included) up to its first exec, against
// one with "qemu64" (no SSE4.2, the least to emulate) in the same run.
func BenchmarkCreateToFirstExecCPU(b *testing.B) {
	vm, base := newBackend(b, nil), newBackend(b, map[string]any{"cpu": "qemu64"})
	createToExec(b, vm, "warm")
	b.ResetTimer()
	var ours, baseline time.Duration
	for i := 0; i < b.N; i++ {
		ours += createToExec(b, vm, backend.ID(fmt.Sprintf("max%d", i)))
		baseline += createToExec(b, base, backend.ID(fmt.Sprintf("qemu64%d", i)))
	}
	backendtest.ReportRatio(b, ours, baseline)
}

// running is a running sandbox of be and a client of its guest.
func running(b *testing.B, be backend.Backend, id backend.ID) *guestclient.Client {
	ctx := context.Background()
	sp := spec(b, id)
	sp.GuestBinary = guestOf(b, be)
	if err := be.Create(ctx, sp); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Destroy(context.Background(), id) })
	if err := be.Start(ctx, id); err != nil {
		b.Fatal(err)
	}
	c := connectBench(b, be, id)
	b.Cleanup(func() { c.Close() })
	c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}) // warm up
	return c
}

// BenchmarkExecRoundTrip: `true` through the guest of a microVM, against the same in a
// bwrap sandbox.
func BenchmarkExecRoundTrip(b *testing.B) {
	vm := running(b, newBackend(b, nil), "benchexec")
	base := running(b, bwrapBackend(b), "baseexec")
	ctx := context.Background()
	b.ResetTimer()
	var ours, baseline time.Duration
	for i := 0; i < b.N; i++ {
		for _, side := range []struct {
			c *guestclient.Client
			d *time.Duration
		}{{vm, &ours}, {base, &baseline}} {
			start := time.Now()
			if code, err := side.c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
				b.Fatalf("exec: %d %v", code, err)
			}
			*side.d += time.Since(start)
		}
	}
	backendtest.ReportRatio(b, ours, baseline)
}

// BenchmarkFileWriteRead: 64 MiB written into and read back from /workspace through
// the guest's channel (the console port under a microVM), against bwrap's socket.
func BenchmarkFileWriteRead(b *testing.B) {
	vm := running(b, newBackend(b, nil), "benchfile")
	base := running(b, bwrapBackend(b), "basefile")
	ctx := context.Background()
	data := bytes.Repeat([]byte("paddock-benchmark-data-0123456789abcdef"), (64<<20)/39)
	b.SetBytes(int64(2 * len(data)))
	b.ResetTimer()
	var ours, baseline time.Duration
	for i := 0; i < b.N; i++ {
		for _, side := range []struct {
			c *guestclient.Client
			d *time.Duration
		}{{vm, &ours}, {base, &baseline}} {
			start := time.Now()
			if _, err := side.c.WriteFile(ctx, "/workspace", "bench.bin", 0o644, false, bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
			if n, err := side.c.ReadFile(ctx, "/workspace", "bench.bin", io.Discard); err != nil || n != int64(len(data)) {
				b.Fatalf("read %d: %v", n, err)
			}
			*side.d += time.Since(start)
		}
	}
	backendtest.ReportRatio(b, ours, baseline)
	mib := float64(2*len(data)*b.N) / (1 << 20)
	b.ReportMetric(mib/ours.Seconds(), "MiB/s")
	b.ReportMetric(mib/baseline.Seconds(), "baseline-MiB/s")
}

// BenchmarkInfoRoundTrip: one call through the guest that starts no process (Info),
// against the same in a bwrap sandbox: the channel's own round trip, apart from what a
// process's start costs in an emulated VM.
func BenchmarkInfoRoundTrip(b *testing.B) {
	vm := running(b, newBackend(b, nil), "benchinfo")
	base := running(b, bwrapBackend(b), "baseinfo")
	ctx := context.Background()
	b.ResetTimer()
	var ours, baseline time.Duration
	for i := 0; i < b.N; i++ {
		for _, side := range []struct {
			c *guestclient.Client
			d *time.Duration
		}{{vm, &ours}, {base, &baseline}} {
			start := time.Now()
			if _, err := side.c.Info(ctx); err != nil {
				b.Fatal(err)
			}
			*side.d += time.Since(start)
		}
	}
	backendtest.ReportRatio(b, ours, baseline)
}

// firstExec connects to the sandbox's guest and runs `true`.
func firstExec(b *testing.B, be backend.Backend, id backend.ID) {
	c := connectBench(b, be, id)
	defer c.Close()
	if code, err := c.Exec(context.Background(), guestclient.ExecOptions{Argv: []string{"true"}}); err != nil || code != 0 {
		b.Fatalf("exec: %d %v", code, err)
	}
}

// BenchmarkResumeToFirstExec: a suspended microVM resumed (its saved state loaded) up to
// its first exec, against the same VM stopped and booted cold up to its first exec, in
// the same run; the suspend's and the stop's own times, and the saved state's size, are
// reported beside.
func BenchmarkResumeToFirstExec(b *testing.B) {
	vm := newBackend(b, nil)
	id := backend.ID("benchresume")
	ctx := context.Background()
	c := running(b, vm, id)
	// Something in memory, as a sandbox at work has: a page cache and a few processes.
	if code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c",
		"git --version >/dev/null; cat /usr/bin/* >/dev/null 2>&1; nohup sleep 100000 >/dev/null 2>&1 &"}}); err != nil || code != 0 {
		b.Fatalf("exec: %d %v", code, err)
	}
	c.Close()
	saved := filepath.Join(vm.Dir(), string(id), "vmstate")
	b.ResetTimer()
	var suspend, resume, stop, cold time.Duration
	var size int64
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := vm.Suspend(ctx, id); err != nil {
			b.Fatal(err)
		}
		suspend += time.Since(start)
		if fi, err := os.Stat(saved); err == nil {
			size += fi.Size()
		}
		start = time.Now()
		if err := vm.Start(ctx, id); err != nil {
			b.Fatal(err)
		}
		firstExec(b, vm, id)
		resume += time.Since(start)

		start = time.Now()
		if err := vm.Stop(ctx, id); err != nil {
			b.Fatal(err)
		}
		stop += time.Since(start)
		start = time.Now()
		if err := vm.Start(ctx, id); err != nil {
			b.Fatal(err)
		}
		firstExec(b, vm, id)
		cold += time.Since(start)
	}
	backendtest.ReportRatio(b, resume, cold)
	b.ReportMetric(float64(suspend.Nanoseconds())/float64(b.N), "suspend-ns/op")
	b.ReportMetric(float64(stop.Nanoseconds())/float64(b.N), "stop-ns/op")
	b.ReportMetric(float64(size)/float64(b.N)/(1<<20), "saved-MiB")
}

// BenchmarkIdleCPU: the processor time an idle VM's QEMU uses under TCG, the guest
// keeping time with the TSC (the default), against a VM booted with tsc=unstable, whose
// kernel keeps time with refined-jiffies and a periodic tick, as it did before; both
// idle side by side, each iteration a 10 s window over both.
func BenchmarkIdleCPU(b *testing.B) {
	vm, old := newBackend(b, nil), newBackend(b, map[string]any{"kernel_args": "tsc=unstable"})
	ctx := context.Background()
	pids := map[*microvm.MicroVM]int{}
	for be, want := range map[*microvm.MicroVM]string{vm: "tsc", old: "refined-jiffies"} {
		id := backend.ID("idle")
		c := running(b, be, id)
		var out bytes.Buffer
		c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"cat", "/sys/devices/system/clocksource/clocksource0/current_clocksource"}, Stdout: &out})
		if got := strings.TrimSpace(out.String()); got != want {
			b.Fatalf("the VM's clock source is %q, want %q", got, want)
		}
		data, err := os.ReadFile(filepath.Join(be.Dir(), string(id), "vm.pid"))
		if err != nil {
			b.Fatal(err)
		}
		var pid int
		fmt.Sscan(string(data), &pid)
		pids[be] = pid
	}
	cpu := func(pid int) time.Duration {
		_, used, err := backend.ProcCPU(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatalf("QEMU's stat: %v", err)
		}
		return used
	}
	time.Sleep(5 * time.Second) // the boot's and the first exec's work done
	b.ResetTimer()
	var ours, baseline time.Duration
	for i := 0; i < b.N; i++ {
		a0, o0 := cpu(pids[vm]), cpu(pids[old])
		time.Sleep(10 * time.Second)
		ours += cpu(pids[vm]) - a0
		baseline += cpu(pids[old]) - o0
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N)/10, "cpu-ms/s")
	b.ReportMetric(float64(baseline.Milliseconds())/float64(b.N)/10, "baseline-cpu-ms/s")
	b.ReportMetric(float64(ours)/float64(baseline), "x-baseline")
}
