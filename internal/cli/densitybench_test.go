package cli_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// BenchmarkDensity: many idle sandboxes (PADDOCK_DENSITY, 200 by default; on bwrap, or on
// the backend PADDOCK_DENSITY_BACKEND names), with the small guest, made one after another by `paddock up` (the median of the first ten ups
// and of the last ten), then `paddock ls` and `paddock exec NAME -- true` timed with all of them
// running, against the same with one running, in the same run. Memory is the host's
// MemAvailable before and after, per sandbox; the daemon's resident size and open files
// are read from /proc. Run it alone (-benchtime 1x): it is a load test.
func BenchmarkDensity(b *testing.B) {
	n := 200
	if v, err := strconv.Atoi(os.Getenv("PADDOCK_DENSITY")); err == nil && v > 0 {
		n = v
	}
	backendName := cmp.Or(os.Getenv("PADDOCK_DENSITY_BACKEND"), "bwrap")
	home, repo := benchHome(b)
	// The guest `make build` puts beside paddock, as a user's sandboxes get it.
	guest, err := testenv.SmallGuest()
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("PADDOCK_GUEST_BINARY", guest)
	ctx := context.Background()
	run := func(args ...string) {
		var errOut strings.Builder
		f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
		if code := cli.Run(ctx, f, args); code != 0 {
			b.Fatalf("paddock %v: %d %s", args, code, errOut.String())
		}
	}
	timed := func(reps int, args ...string) time.Duration {
		ds := make([]time.Duration, reps)
		for i := range ds {
			start := time.Now()
			run(args...)
			ds[i] = time.Since(start)
		}
		return quantile(ds, 0.5)
	}
	run("up", repo, "--name", "s0", "--backend", backendName)
	lsOne, execOne := timed(30, "ls"), timed(30, "exec", "s0", "--", "true")

	ups := make([]time.Duration, 0, n)
	for i := 1; i < n; i++ {
		start := time.Now()
		run("up", repo, "--name", fmt.Sprintf("s%d", i), "--backend", backendName)
		ups = append(ups, time.Since(start))
		if i%25 == 0 {
			b.Logf("%d sandboxes, the last up took %v", i+1, ups[len(ups)-1])
		}
	}
	k := min(10, len(ups))
	time.Sleep(2 * time.Second) // the guests settle
	pss := sandboxPSS(b, home)
	if backendName == "docker" {
		pss = containersPSS(b)
	}
	lsAll, execAll := timed(30, "ls"), timed(30, "exec", fmt.Sprintf("s%d", n/2), "--", "true")

	pid := clitest.DaemonPID(home)
	b.ReportMetric(float64(n), "sandboxes")
	b.ReportMetric(ms(quantile(ups[:k], 0.5)), "first-ups-ms")
	b.ReportMetric(ms(quantile(ups[len(ups)-k:], 0.5)), "last-ups-ms")
	b.ReportMetric(ms(lsAll), "ls-ms-median")
	b.ReportMetric(ms(lsAll)/ms(lsOne), "ls-x-one")
	b.ReportMetric(ms(execAll), "exec-ms-median")
	b.ReportMetric(ms(execAll)/ms(execOne), "exec-x-one")
	b.ReportMetric(float64(pss)/float64(n)/1024, "PSS-MiB/sandbox")
	b.ReportMetric(float64(procStatusKiB(b, pid, "VmRSS"))/1024, "daemon-MiB")
	b.ReportMetric(float64(openFiles(pid)), "daemon-fds")
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// sandboxPSS sums the proportional set size (shared pages split among their users) of
// every process the daemon at home started (its sandboxes' bwrap processes and all they
// run), the daemon itself not included.
func sandboxPSS(b *testing.B, home string) int64 {
	daemon := clitest.DaemonPID(home)
	parent := processParents()
	var total int64
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == daemon {
				total += meminfoKiB(b, fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss")
				break
			}
		}
	}
	return total
}

// containersPSS sums the proportional set size of every process in paddock's docker
// sandboxes and of the engine's shim beside each (a sandbox's cost the engine pays).
func containersPSS(b *testing.B) int64 {
	out, err := exec.Command("sh", "-c", "docker inspect -f '{{.State.Pid}}' $(docker ps -q --filter label=dev.paddock.sandbox)").Output()
	if err != nil {
		b.Fatal(err)
	}
	inits := map[int]bool{}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			inits[pid] = true
		}
	}
	parent := processParents()
	counted := map[int]bool{}
	for pid := range parent {
		for p := pid; p > 1; p = parent[p] {
			if inits[p] {
				counted[pid] = true
				counted[parent[p]] = true // the shim
				break
			}
		}
	}
	var total int64
	for pid := range counted {
		total += meminfoKiB(b, fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss")
	}
	return total
}

// processParents maps every process to its parent.
func processParents() map[int]int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 {
				parent[pid], _ = strconv.Atoi(f[1])
			}
		}
	}
	return parent
}

func procStatusKiB(b *testing.B, pid int, field string) int64 {
	return meminfoKiB(b, fmt.Sprintf("/proc/%d/status", pid), field)
}

func meminfoKiB(b *testing.B, path, field string) int64 {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			v, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return v
		}
	}
	b.Fatalf("no %s in %s", field, path)
	return 0
}

func openFiles(pid int) int {
	entries, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	return len(entries)
}
