package bwrap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/backend"
)

// Every sandbox runs in a cgroup of its own, made by Start with the sandbox's limits and
// removed by Stop. Its processes are born in it: none of them ever runs outside it.
//
//   - cgroup v1 (one hierarchy per controller): a directory per controller, pids, memory
//     and cpu, each <mount>/paddock/<id>. bwrap is forked by a thread of the daemon that
//     has first joined those directories (in v1 a thread is a member on its own, and a
//     child is born in the cgroups of the thread that forks it); the thread then ends.
//   - cgroup v2 (unified): one directory, forked straight into it (clone3 with
//     CLONE_INTO_CGROUP). As root it is <mount>/paddock/<id>; otherwise the daemon must
//     run in a cgroup delegated to it (systemd's Delegate=yes): it moves itself into a
//     leaf of it, daemon/, and makes sandbox-<id> beside it.
//
// Memory gets no swap beyond its limit, and the sandbox's tmpfs mounts are written by
// its own processes, so what they hold is charged to it.

// cgroupControllers are the controllers a sandbox's limits need.
var cgroupControllers = []string{"cpu", "memory", "pids"}

// cpuPeriod is the scheduler period the CPU quota is expressed in, in microseconds.
const cpuPeriod = 100_000

// cgroupHost is how this host gives sandboxes cgroups, or why it cannot.
type cgroupHost struct {
	// version is 1 or 2; 0 when sandboxes get no cgroup (reason and fix say why).
	version int
	// v1 maps each controller to the directory sandboxes' cgroups are made in (v1Mounts:
	// its hierarchy's root; parent: the path between them).
	v1, v1Mounts map[string]string
	parent       string
	// v2 is the directory sandboxes' cgroups are made in; v2Mount its hierarchy's root.
	v2, v2Mount string
	// delegated is set on v2 when the daemon is not root: v2 is its own cgroup.
	delegated bool

	reason, fix string

	mu       sync.Mutex
	prepared bool
}

// notEnforced is the error that says sandboxes get no cgroup here, and why.
func (h *cgroupHost) notEnforced() *backend.LimitsNotEnforcedError {
	return &backend.LimitsNotEnforcedError{Reason: h.reason, Fix: h.fix}
}

// defaultCgroupParent is where sandboxes' cgroups go, below each hierarchy's root.
const defaultCgroupParent = "paddock"

// cgroupParent reads the cgroup_parent option: a relative path below each hierarchy's
// root (as root on v2; a delegated daemon uses its own cgroup).
func cgroupParent(opts map[string]any) (string, error) {
	v, ok := opts["cgroup_parent"]
	if !ok {
		return defaultCgroupParent, nil
	}
	s, ok := v.(string)
	if !ok || s == "" || filepath.IsAbs(s) || !filepath.IsLocal(s) {
		return "", fmt.Errorf("backends.bwrap.cgroup_parent must be a relative path below the cgroup hierarchy's root, like \"paddock\", got %v", v)
	}
	return filepath.Clean(s), nil
}

// detectCgroups finds where sandboxes' cgroups can be made, below parent, from
// /proc/self/mountinfo and /proc/self/cgroup.
func detectCgroups(parent string) *cgroupHost {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return &cgroupHost{reason: "cannot read /proc/self/mountinfo: " + err.Error()}
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return &cgroupHost{reason: "cannot read /proc/self/cgroup: " + err.Error()}
	}
	return parseCgroups(string(mountinfo), string(self), os.Geteuid(), parent)
}

// parseCgroups is detectCgroups on given file contents: v1 when one v1 hierarchy per
// needed controller is mounted, else v2 when a unified hierarchy offers them all.
func parseCgroups(mountinfo, self string, euid int, parent string) *cgroupHost {
	v1 := map[string]string{}
	var v2Mounts []string
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(postFields) < 3 {
			continue
		}
		mountPoint := backend.UnescapeMountinfo(fields[4])
		switch postFields[0] {
		case "cgroup":
			for _, opt := range strings.Split(postFields[2], ",") {
				if slices.Contains(cgroupControllers, opt) && v1[opt] == "" {
					v1[opt] = mountPoint
				}
			}
		case "cgroup2":
			v2Mounts = append(v2Mounts, mountPoint)
		}
	}
	if len(v1) == len(cgroupControllers) {
		h := &cgroupHost{version: 1, v1: map[string]string{}, v1Mounts: v1, parent: parent}
		for c, m := range v1 {
			h.v1[c] = filepath.Join(m, parent)
		}
		if euid != 0 {
			for _, c := range cgroupControllers {
				if unix.Access(h.v1[c], unix.W_OK) != nil {
					return &cgroupHost{reason: fmt.Sprintf("the daemon is not root (uid %d) and cannot make cgroups in %s", euid, h.v1[c]),
						fix: fmt.Sprintf("run the daemon as root, or let its user make them: sudo mkdir %s && sudo chown -R %d %s (for each of %s)",
							h.v1[c], euid, h.v1[c], strings.Join(cgroupControllers, ", "))}
				}
			}
		}
		return h
	}
	for _, m := range v2Mounts {
		avail, err := os.ReadFile(filepath.Join(m, "cgroup.controllers"))
		if err != nil {
			continue
		}
		if missing := missingControllers(string(avail)); len(missing) > 0 {
			continue
		}
		if euid == 0 {
			return &cgroupHost{version: 2, v2: filepath.Join(m, parent), v2Mount: m}
		}
		own := ""
		for _, line := range strings.Split(self, "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				own = p
			}
		}
		dir := filepath.Join(m, own)
		if filepath.Base(dir) == "daemon" {
			dir = filepath.Dir(dir) // a daemon that moved itself into its leaf before
		}
		if own == "" || own == "/" || unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) != nil ||
			unix.Access(filepath.Join(dir, "cgroup.subtree_control"), unix.W_OK) != nil {
			return &cgroupHost{reason: fmt.Sprintf("the daemon is not root (uid %d) and its cgroup %s is not delegated to it", euid, orRoot(own)),
				fix: "run the daemon as root, or in a cgroup delegated to it: systemd-run --user --scope -p Delegate=yes paddock serve --foreground"}
		}
		return &cgroupHost{version: 2, v2: dir, v2Mount: m, delegated: true}
	}
	missing := []string{}
	for _, c := range cgroupControllers {
		if v1[c] == "" {
			missing = append(missing, c)
		}
	}
	return &cgroupHost{reason: "no cgroup hierarchy here offers " + strings.Join(missing, ", "),
		fix: "mount cgroup v2 with them enabled (the default on current distributions), or cgroup v1 hierarchies for pids, memory and cpu"}
}

func orRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// missingControllers lists the needed controllers a cgroup.controllers line lacks.
func missingControllers(line string) []string {
	have := strings.Fields(line)
	var missing []string
	for _, c := range cgroupControllers {
		if !slices.Contains(have, c) {
			missing = append(missing, c)
		}
	}
	return missing
}

// describe says in words what the host gives sandboxes, for doctor.
func (h *cgroupHost) describe() string {
	switch h.version {
	case 1:
		// Usually /sys/fs/cgroup/{cpu,memory,pids}/paddock.
		base := filepath.Dir(h.v1Mounts[cgroupControllers[0]])
		var dirs []string
		for _, c := range cgroupControllers {
			if h.v1Mounts[c] != filepath.Join(base, c) {
				base = ""
			}
			dirs = append(dirs, h.v1[c])
		}
		if base != "" {
			return "cgroup v1: " + filepath.Join(base, "{"+strings.Join(cgroupControllers, ",")+"}", h.parent)
		}
		return "cgroup v1: " + strings.Join(dirs, ", ")
	case 2:
		return "cgroup v2: " + h.v2
	}
	return "none"
}

// prepare makes the parent directories, once; on v2 it enables the controllers for the
// sandboxes' cgroups and, for a delegated daemon, moves the daemon into its own leaf (a
// cgroup with processes cannot hand controllers to its children).
func (h *cgroupHost) prepare() error {
	if h.version == 0 {
		return h.notEnforced()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.prepared {
		return nil
	}
	var err error
	fix := "run the daemon as root, or in a cgroup delegated to it: systemd-run --user --scope -p Delegate=yes paddock serve --foreground"
	if h.version == 1 {
		fix = "run the daemon as root, and check that [backends.bwrap] cgroup_parent names a directory it can make in each hierarchy"
		for _, c := range cgroupControllers {
			if err = os.MkdirAll(h.v1[c], 0o755); err != nil {
				err = fmt.Errorf("make cgroup: %w", err)
				break
			}
		}
	} else {
		err = h.prepareV2()
	}
	if err != nil {
		return &backend.LimitsNotEnforcedError{Reason: err.Error(), Fix: fix}
	}
	h.prepared = true
	return nil
}

var enableControllers = "+" + strings.Join(cgroupControllers, " +")

func (h *cgroupHost) prepareV2() error {
	if h.delegated {
		leaf := filepath.Join(h.v2, "daemon")
		if err := mkdirCgroup(leaf); err != nil {
			return err
		}
		if err := writeCgroup(leaf, "cgroup.procs", "0"); err != nil {
			return fmt.Errorf("move the daemon into its cgroup's leaf %s: %w", leaf, err)
		}
		if err := writeCgroup(h.v2, "cgroup.subtree_control", enableControllers); err != nil {
			return fmt.Errorf("enable %s in %s (is another process in it?): %w", enableControllers, h.v2, err)
		}
		return nil
	}
	// As root: the hierarchy's root hands the controllers down through each directory to
	// the parent (paddock/), which hands them to each sandbox.
	dir := h.v2Mount
	rel, err := filepath.Rel(h.v2Mount, h.v2)
	if err != nil {
		return err
	}
	for _, name := range append([]string{"."}, strings.Split(rel, string(filepath.Separator))...) {
		dir = filepath.Join(dir, name)
		if err := mkdirCgroup(dir); err != nil {
			return err
		}
		if err := writeCgroup(dir, "cgroup.subtree_control", enableControllers); err != nil {
			return fmt.Errorf("enable %s in %s: %w", enableControllers, dir, err)
		}
	}
	return nil
}

// sandboxCgroup is one sandbox's cgroup: a directory per controller on v1, one on v2.
type sandboxCgroup struct {
	version int
	dirs    []string
}

// sandbox returns the cgroup of sandbox id (which may not exist); version 0 when
// sandboxes get none.
func (h *cgroupHost) sandbox(id backend.ID) sandboxCgroup {
	switch h.version {
	case 1:
		cg := sandboxCgroup{version: 1}
		for _, c := range cgroupControllers {
			cg.dirs = append(cg.dirs, filepath.Join(h.v1[c], string(id)))
		}
		return cg
	case 2:
		name := string(id)
		if h.delegated {
			name = "sandbox-" + name
		}
		return sandboxCgroup{version: 2, dirs: []string{filepath.Join(h.v2, name)}}
	}
	return sandboxCgroup{}
}

// dir returns the directory holding a controller's files.
func (c sandboxCgroup) dir(controller string) string {
	if c.version == 1 {
		return c.dirs[slices.Index(cgroupControllers, controller)]
	}
	return c.dirs[0]
}

// exists reports whether any of the cgroup's directories exists.
func (c sandboxCgroup) exists() []string {
	var out []string
	for _, d := range c.dirs {
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// create makes the cgroup afresh and writes its limits.
func (c sandboxCgroup) create(ctx context.Context, l backend.Limits) error {
	if err := c.remove(ctx); err != nil {
		return err
	}
	for _, d := range c.dirs {
		if err := mkdirCgroup(d); err != nil {
			return err
		}
	}
	quota := strconv.FormatInt(int64(math.Round(l.CPUs*cpuPeriod)), 10)
	mem := strconv.FormatInt(l.MemoryBytes, 10)
	pids := strconv.FormatInt(l.Pids, 10)
	var writes [][3]string // dir, file, value; an empty dir marks a file the kernel may lack
	if c.version == 1 {
		cpu, memory := c.dir("cpu"), c.dir("memory")
		writes = [][3]string{
			{cpu, "cpu.cfs_period_us", strconv.Itoa(cpuPeriod)},
			{cpu, "cpu.cfs_quota_us", quota},
			{memory, "memory.limit_in_bytes", mem},
			// memory+swap equal to memory: no swap beyond the limit. Absent when the kernel
			// does not account swap, and then there is none to give.
			{memory, "?memory.memsw.limit_in_bytes", mem},
			{c.dir("pids"), "pids.max", pids},
		}
	} else {
		d := c.dirs[0]
		writes = [][3]string{
			{d, "cpu.max", quota + " " + strconv.Itoa(cpuPeriod)},
			{d, "memory.max", mem},
			{d, "?memory.swap.max", "0"},
			{d, "pids.max", pids},
		}
	}
	for _, w := range writes {
		file, optional := strings.CutPrefix(w[1], "?")
		err := writeCgroup(w[0], file, w[2])
		if optional && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			c.remove(context.WithoutCancel(ctx))
			return err
		}
	}
	return nil
}

// read reads back the limits in force.
func (c sandboxCgroup) read() (backend.Limits, error) {
	var l backend.Limits
	var err error
	if c.version == 1 {
		var quota, period int64
		if quota, err = readCgroupInt(c.dir("cpu"), "cpu.cfs_quota_us"); err != nil {
			return l, err
		}
		if period, err = readCgroupInt(c.dir("cpu"), "cpu.cfs_period_us"); err != nil {
			return l, err
		}
		l.CPUs = cpus(quota, period)
		if l.MemoryBytes, err = readCgroupInt(c.dir("memory"), "memory.limit_in_bytes"); err != nil {
			return l, err
		}
	} else {
		data, err := os.ReadFile(filepath.Join(c.dirs[0], "cpu.max"))
		if err != nil {
			return l, fmt.Errorf("read cgroup: %w", err)
		}
		f := strings.Fields(string(data))
		if len(f) == 2 {
			quota, _ := strconv.ParseInt(f[0], 10, 64) // "max": no quota, 0
			period, _ := strconv.ParseInt(f[1], 10, 64)
			l.CPUs = cpus(quota, period)
		}
		if l.MemoryBytes, err = readCgroupInt(c.dirs[0], "memory.max"); err != nil {
			return l, err
		}
	}
	if l.Pids, err = readCgroupInt(c.dir("pids"), "pids.max"); err != nil {
		return l, err
	}
	return l, nil
}

func cpus(quota, period int64) float64 {
	if quota <= 0 || period <= 0 {
		return float64(runtime.NumCPU())
	}
	return math.Round(float64(quota)/float64(period)*1000) / 1000
}

// start starts cmd in the cgroup: every process the sandbox will ever have descends from
// cmd, and so is born in it.
func (c sandboxCgroup) start(cmd *exec.Cmd) error {
	switch c.version {
	case 1:
		var tasks []string
		for _, d := range c.dirs {
			tasks = append(tasks, filepath.Join(d, "tasks"))
		}
		return startFromThreadIn(cmd, tasks)
	case 2:
		dir, err := os.Open(c.dirs[0])
		if err != nil {
			return fmt.Errorf("open cgroup: %w", err)
		}
		defer dir.Close()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(dir.Fd())
		return cmd.Start()
	}
	return cmd.Start()
}

// startFromThreadIn starts cmd from a thread of its own that has first joined the v1
// cgroups whose tasks files are given: the child is born in them. The goroutine keeps
// the thread locked to the end, so the runtime ends the thread with it and nothing else
// of the daemon ever runs in the sandbox's cgroups.
func startFromThreadIn(cmd *exec.Cmd, tasks []string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The runtime never ends the main thread: use another, which cannot be this
			// one while it is locked here.
			errc <- startFromThreadIn(cmd, tasks)
			runtime.UnlockOSThread()
			return
		}
		tid := strconv.Itoa(unix.Gettid())
		for _, f := range tasks {
			if err := writeCgroup(filepath.Dir(f), filepath.Base(f), tid); err != nil {
				errc <- fmt.Errorf("join the sandbox's cgroup: %w", err)
				return
			}
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// remove kills whatever is left in the cgroup and removes it. A missing cgroup is not an
// error.
func (c sandboxCgroup) remove(ctx context.Context) error {
	for _, d := range c.dirs {
		if err := removeCgroupDir(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

func removeCgroupDir(ctx context.Context, dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for delay := time.Millisecond; ; delay = min(delay*2, 100*time.Millisecond) {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil // gone, or could never have been made
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		// Processes remain: the sandbox's, since nothing else is ever in it.
		if writeCgroup(dir, "cgroup.kill", "1") != nil {
			for _, pid := range cgroupPids(dir) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove cgroup %s: %w", dir, ctx.Err())
		case <-time.After(delay):
		}
	}
}

func cgroupPids(dir string) []int {
	f, err := os.Open(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

func mkdirCgroup(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make cgroup: %w", err)
	}
	return nil
}

// writeCgroupFile writes a cgroup control file. Tests of the v2 layout point it at a
// plain directory, where the files are made.
var writeCgroupFile = func(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeCgroup(dir, file, value string) error {
	if err := writeCgroupFile(filepath.Join(dir, file), value); err != nil {
		return fmt.Errorf("write %s to %s: %w", value, filepath.Join(dir, file), err)
	}
	return nil
}

// readCgroupInt reads a number from a control file; "max" reads as unlimited
// (math.MaxInt64).
func readCgroupInt(dir, file string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0, fmt.Errorf("read cgroup: %w", err)
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return math.MaxInt64, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", filepath.Join(dir, file), err)
	}
	return n, nil
}
