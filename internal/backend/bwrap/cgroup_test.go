package bwrap

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/paddockhq/paddock/internal/backend"
)

// mountinfo lines as the kernel writes them.
func mountLine(id int, mountPoint, fsType, opts string) string {
	return strconv.Itoa(id) + " 30 0:" + strconv.Itoa(id) + " / " + mountPoint + " rw,relatime - " + fsType + " " + fsType + " " + opts
}

func TestParseCgroups(t *testing.T) {
	v2Root := t.TempDir()
	os.WriteFile(filepath.Join(v2Root, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids rdma misc\n"), 0o644)
	bare := t.TempDir() // a unified hierarchy without the controllers (hybrid hosts)
	os.WriteFile(filepath.Join(bare, "cgroup.controllers"), []byte("hugetlb\n"), 0o644)
	v1 := strings.Join([]string{
		mountLine(31, "/sys/fs/cgroup/cpu,cpuacct", "cgroup", "rw,cpu,cpuacct"),
		mountLine(33, "/sys/fs/cgroup/cpuset", "cgroup", "rw,cpuset"),
		mountLine(34, "/sys/fs/cgroup/memory", "cgroup", "rw,memory"),
		mountLine(38, "/sys/fs/cgroup/pids", "cgroup", "rw,pids"),
		mountLine(39, "/sys/fs/cgroup/systemd", "cgroup", "rw,name=systemd"),
		mountLine(40, bare, "cgroup2", "rw"),
	}, "\n")

	h := parseCgroups(v1, "0::/\n", 0, "paddock")
	if h.version != 1 {
		t.Fatalf("a host with v1 cpu, memory and pids hierarchies: version %d (%s)", h.version, h.reason)
	}
	want := map[string]string{"cpu": "/sys/fs/cgroup/cpu,cpuacct/paddock", "memory": "/sys/fs/cgroup/memory/paddock", "pids": "/sys/fs/cgroup/pids/paddock"}
	for c, d := range want {
		if h.v1[c] != d {
			t.Errorf("v1 %s: %s, want %s", c, h.v1[c], d)
		}
	}
	if got := h.sandbox("abc").dirs; strings.Join(got, " ") != "/sys/fs/cgroup/cpu,cpuacct/paddock/abc /sys/fs/cgroup/memory/paddock/abc /sys/fs/cgroup/pids/paddock/abc" {
		t.Errorf("a sandbox's v1 cgroup: %v", got)
	}

	// No v1 pids: the unified hierarchy that has every controller is used instead.
	noPids := strings.Replace(v1, mountLine(38, "/sys/fs/cgroup/pids", "cgroup", "rw,pids"), mountLine(41, v2Root, "cgroup2", "rw"), 1)
	h = parseCgroups(noPids, "0::/\n", 0, "paddock")
	if h.version != 2 || h.v2 != filepath.Join(v2Root, "paddock") || h.delegated {
		t.Fatalf("v2 as root: %+v", h)
	}
	if got := h.sandbox("abc").dirs; len(got) != 1 || got[0] != filepath.Join(v2Root, "paddock", "abc") {
		t.Errorf("a sandbox's v2 cgroup as root: %v", got)
	}

	// Neither: why, and what to do.
	h = parseCgroups(strings.Replace(v1, mountLine(38, "/sys/fs/cgroup/pids", "cgroup", "rw,pids"), "", 1), "0::/\n", 0, "paddock")
	if h.version != 0 || !strings.Contains(h.reason, "no cgroup hierarchy here offers pids") || h.fix == "" {
		t.Errorf("no pids anywhere: %+v", h)
	}
	if _, err := (&Bwrap{cg: h}).Limits(context.Background(), "x"); err == nil {
		t.Error("Limits of a sandbox of a backend without cgroups succeeded")
	}
}

// TestParseCgroupsDelegated: a daemon that is not root uses its own v2 cgroup when it
// is delegated to it (it can write its cgroup.procs and cgroup.subtree_control), and
// says what to do when it is not.
func TestParseCgroupsDelegated(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the checks of write access pass only for root in this test's directories")
	}
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
	mi := mountLine(40, root, "cgroup2", "rw")
	own := "/user.slice/user-1000.slice/user@1000.service/app.slice/paddock.scope"
	h := parseCgroups(mi, "0::"+own+"\n", 1000, "paddock")
	if h.version != 0 || !strings.Contains(h.reason, "is not delegated to it") || !strings.Contains(h.fix, "Delegate=yes") {
		t.Fatalf("an undelegated cgroup: %+v", h)
	}
	dir := filepath.Join(root, own)
	os.MkdirAll(dir, 0o755)
	for _, f := range []string{"cgroup.procs", "cgroup.subtree_control"} {
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	h = parseCgroups(mi, "0::"+own+"\n", 1000, "paddock")
	if h.version != 2 || !h.delegated || h.v2 != dir {
		t.Fatalf("a delegated cgroup: %+v", h)
	}
	if got := h.sandbox("abc").dirs[0]; got != filepath.Join(dir, "sandbox-abc") {
		t.Errorf("a sandbox's cgroup in a delegated one: %s", got)
	}
	// Once the daemon moved into its leaf, the delegated cgroup is still found.
	if h := parseCgroups(mi, "0::"+own+"/daemon\n", 1000, "paddock"); h.v2 != dir {
		t.Errorf("from the daemon's leaf: %+v", h)
	}
}

// TestCgroupV2Files checks what a v2 sandbox cgroup is made of, in a plain directory that
// stands for the unified hierarchy (the kernel here mounts v1): the controllers handed
// down from the root, and the limit files.
func TestCgroupV2Files(t *testing.T) {
	root := t.TempDir()
	write := writeCgroupFile
	t.Cleanup(func() { writeCgroupFile = write })
	writeCgroupFile = func(path, value string) error { return os.WriteFile(path, []byte(value), 0o644) }

	h := &cgroupHost{version: 2, v2: filepath.Join(root, "paddock"), v2Mount: root}
	if err := h.prepare(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, filepath.Join(root, "paddock")} {
		if got := readFile(t, filepath.Join(d, "cgroup.subtree_control")); got != "+cpu +memory +pids" {
			t.Errorf("%s/cgroup.subtree_control = %q", d, got)
		}
	}
	cg := h.sandbox("abc")
	if err := cg.create(context.Background(), backend.Limits{CPUs: 1.5, MemoryBytes: 256 << 20, Pids: 100}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "paddock", "abc")
	for file, want := range map[string]string{"cpu.max": "150000 100000", "memory.max": "268435456", "memory.swap.max": "0", "pids.max": "100"} {
		if got := readFile(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if got, err := cg.read(); err != nil || got != (backend.Limits{CPUs: 1.5, MemoryBytes: 256 << 20, Pids: 100}) {
		t.Errorf("read back: %+v, %v", got, err)
	}

	// Delegated: the daemon moves into its leaf before the controllers are enabled.
	own := filepath.Join(root, "own")
	os.Mkdir(own, 0o755)
	h = &cgroupHost{version: 2, v2: own, v2Mount: root, delegated: true}
	if err := h.prepare(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(own, "daemon", "cgroup.procs")); got != "0" {
		t.Errorf("the daemon did not move into its leaf: %q", got)
	}
	if got := readFile(t, filepath.Join(own, "cgroup.subtree_control")); got != "+cpu +memory +pids" {
		t.Errorf("controllers of the delegated cgroup: %q", got)
	}
}

// TestCgroupV2Start starts a process straight into a cgroup of the kernel's unified
// hierarchy (clone3 with CLONE_INTO_CGROUP) and removes the cgroup with the process
// still in it. The unified hierarchy here has no cpu, memory or pids controller, so
// only the placement and the removal are checked, for real.
func TestCgroupV2Start(t *testing.T) {
	mountinfo, _ := os.ReadFile("/proc/self/mountinfo")
	unified := ""
	for _, line := range strings.Split(string(mountinfo), "\n") {
		if f := strings.Fields(line); len(f) > 8 && strings.Contains(line, " - cgroup2 ") {
			unified = f[4]
		}
	}
	if unified == "" || os.Geteuid() != 0 {
		t.Skip("no cgroup2 hierarchy this test may write")
	}
	cg := sandboxCgroup{version: 2, dirs: []string{filepath.Join(unified, "paddock-test-"+strconv.Itoa(os.Getpid()))}}
	if err := mkdirCgroup(cg.dirs[0]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cg.remove(context.Background()) })
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if err := cg.start(cmd); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "0::/"+filepath.Base(cg.dirs[0])+"\n") {
		t.Fatalf("the process is not in %s:\n%s", cg.dirs[0], data)
	}
	if err := cg.remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg.dirs[0]); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the cgroup is still there: %v", err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
