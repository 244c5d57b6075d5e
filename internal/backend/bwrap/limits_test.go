package bwrap_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
)

// TestCgroup checks a sandbox's cgroup on the host: every process of the sandbox (bwrap,
// the namespace init, the resident guest, what it runs) is in it from the start, its
// files hold the limits asked for, the tmpfs mounts inside are sized, and Stop and
// Destroy remove it.
func TestCgroup(t *testing.T) {
	b, agent := newBackend(t)
	if b.CgroupVersion() == 0 {
		why := b.Report(context.Background())[0].Text
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must give sandboxes cgroups: %s", why)
		}
		t.Skipf("sandboxes get no cgroup here: %s", why)
	}
	ctx := context.Background()
	id := backend.ID("cgroup1")
	spec := backend.Spec{ID: id, Name: "cgroup", GuestBinary: agent.Path, GuestSHA256: agent.SHA256,
		CPUs: 1.5, MemoryBytes: 300 << 20, PidsLimit: 200}
	if err := b.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), id) })
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	dirs := b.CgroupDirs(id)
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) { return b.Dial(ctx, id) }, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	run := func(script string) string {
		t.Helper()
		var out strings.Builder
		code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out})
		if err != nil || code != 0 {
			t.Fatalf("%s: exit %d, %v: %s", script, code, err, out.String())
		}
		return strings.TrimSpace(out.String())
	}
	sleeper := run("sleep 300 >/dev/null 2>&1 & echo $!")

	procs := sandboxProcesses(t, b.Dir(), id)
	if len(procs) < 4 { // bwrap, its init, the agent, the sleep
		t.Fatalf("found %d processes of the sandbox, want at least 4: %v", len(procs), procs)
	}
	for pid, cmdline := range procs {
		data, err := os.ReadFile("/proc/" + pid + "/cgroup")
		if err != nil {
			continue // ended meanwhile
		}
		for _, d := range dirs {
			if !inCgroup(string(data), d) {
				t.Errorf("process %s (%s) is not in %s:\n%s", pid, cmdline, d, data)
			}
		}
	}
	if !strings.Contains(strings.Join(mapValues(procs), "\n"), inside.GuestCommand+" serve") {
		t.Errorf("the resident agent is not among the sandbox's processes: %v", procs)
	}
	_ = sleeper

	want := backend.Limits{CPUs: 1.5, MemoryBytes: 300 << 20, Pids: 200}
	if got, err := b.Limits(ctx, id); err != nil || got != want {
		t.Errorf("Limits = %+v, %v; want %+v", got, err, want)
	}
	files := map[string]string{"pids.max": "200", "memory.limit_in_bytes": "314572800", "memory.memsw.limit_in_bytes": "314572800",
		"cpu.cfs_quota_us": "150000", "cpu.cfs_period_us": "100000", // v1
		"memory.max": "314572800", "memory.swap.max": "0", "cpu.max": "150000 100000"} // v2
	seen := 0
	for _, d := range dirs {
		for name, want := range files {
			data, err := os.ReadFile(filepath.Join(d, name))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			seen++
			if got := strings.TrimSpace(string(data)); got != want {
				t.Errorf("%s/%s = %s, want %s", d, name, got, want)
			}
		}
	}
	if seen < 4 {
		t.Errorf("only %d limit files found in %v", seen, dirs)
	}

	// The mounts: /tmp half the memory, /run and /dev/shm 64 MiB, / and /dev read-only.
	if got := run("df -B1 --output=size /tmp /run /dev/shm | tail -n +2 | tr -s ' \\n' ' '"); got != strconv.Itoa(150<<20)+" "+strconv.Itoa(64<<20)+" "+strconv.Itoa(64<<20) {
		t.Errorf("sizes of /tmp, /run and /dev/shm: %s", got)
	}
	if got := run("touch /x 2>&1; touch /dev/x 2>&1; true"); strings.Count(got, "Read-only file system") != 2 {
		t.Errorf("/ or /dev is writable: %q", got)
	}
	// What /tmp holds is charged to the sandbox's memory.
	usage := func() int64 {
		for _, d := range dirs {
			for _, f := range []string{"memory.usage_in_bytes", "memory.current"} {
				if data, err := os.ReadFile(filepath.Join(d, f)); err == nil {
					n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
					return n
				}
			}
		}
		t.Fatal("no memory usage file in the sandbox's cgroup")
		return 0
	}
	before := usage()
	run("head -c 67108864 /dev/zero > /tmp/charge")
	if grown := usage() - before; grown < 60<<20 {
		t.Errorf("64 MiB written to /tmp grew the sandbox's memory by %d KiB only", grown>>10)
	}
	run("rm /tmp/charge")

	if err := b.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("Stop left the cgroup %s", d)
		}
	}
	if _, err := b.Limits(ctx, id); !errors.Is(err, backend.ErrNotRunning) {
		t.Errorf("Limits of a stopped sandbox: %v, want ErrNotRunning", err)
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Limits(ctx, id); err != nil || got != want {
		t.Errorf("after a restart, Limits = %+v, %v; want %+v", got, err, want)
	}
	if err := b.Destroy(ctx, id); err != nil {
		t.Fatal(err)
	}
	if left := b.Leftovers(id); len(left) > 0 {
		t.Fatalf("Destroy left: %v", left)
	}
}

// sandboxProcesses finds the host processes of a sandbox: by its directory on their
// command line (bwrap) or its ID in their environment (everything inside).
func sandboxProcesses(t *testing.T, dir string, id backend.ID) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		environ, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if strings.Contains(string(cmdline), filepath.Join(dir, string(id))) || strings.Contains(string(environ), "PADDOCK_SANDBOX_ID="+string(id)+"\x00") {
			out[e.Name()] = strings.ReplaceAll(string(cmdline), "\x00", " ")
		}
	}
	return out
}

// inCgroup reports whether /proc/PID/cgroup content places the process in dir: a line
// whose path is dir's path below its hierarchy's mount.
func inCgroup(procCgroup, dir string) bool {
	for _, line := range strings.Split(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[2] != "/" && strings.HasSuffix(dir, parts[2]) {
			return true
		}
	}
	return false
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
