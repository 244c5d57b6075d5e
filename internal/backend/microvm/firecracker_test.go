package microvm_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/microvm/firecracker/fctest"
	"github.com/paddockhq/paddock/internal/vmspec"
)

// fakeFirecrackerEnv makes the test binary, run again, be the fake firecracker program.
const fakeFirecrackerEnv = "PADDOCK_FCTEST_FIRECRACKER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeFirecrackerEnv) == "1" {
		if filepath.Base(os.Args[0]) == "jailer" {
			os.Exit(fctest.JailerMain(os.Args[1:]))
		}
		os.Exit(fctest.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeFirecracker is the backend with --vmm firecracker, whose firecracker program is
// this test binary run as fctest's fake: its API checks every call as Firecracker's
// specification states, and its "VM" is the small guest as a host process behind the
// vsock socket's CONNECT handshake.
func fakeFirecracker(t *testing.T, opts map[string]any) *backendWithDir {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// On the process, so these tests stay serial: the backend starts firecracker (and the
	// jailer) with paddock's own environment, where the fake finds these two.
	t.Setenv(fakeFirecrackerEnv, "1")
	t.Setenv(fctest.GuestEnv, guest(t))
	all := map[string]any{"vmm": "firecracker", "firecracker": exe, "start_timeout": 30}
	for k, v := range opts {
		all[k] = v
	}
	b := newBackend(t, all)
	return &backendWithDir{b, b.Dir(), exe}
}

// programs links the test binary as the programs named (the fake dispatches on its
// name), returning their paths.
func programs(t *testing.T, names ...string) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.Symlink(exe, p); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

type backendWithDir struct {
	backend.Backend
	dir string
	fc  string // the fake firecracker program
}

// fcCall is a call the fake recorded.
type fcCall struct {
	Method, Path string
	Body         map[string]any
	Status       int
}

// fcCalls are the calls the sandbox's firecracker processes received, in order.
func fcCalls(t *testing.T, dir string) []fcCall {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "fc.sock"+fctest.CallsFile))
	if errors.Is(err, os.ErrNotExist) {
		// Under the jailer: in its chroot.
		f, err = os.Open(filepath.Join(dir, "jail/firecracker/paddock-"+filepath.Base(dir)+"/root/fc.sock"+fctest.CallsFile))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var calls []fcCall
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c fcCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	return calls
}

// configCalls are the calls other than GET / (the driver's waits and status checks).
func configCalls(calls []fcCall) []fcCall {
	var out []fcCall
	for _, c := range calls {
		if c.Method != "GET" {
			out = append(out, c)
		}
	}
	return out
}

func callNames(calls []fcCall) string {
	var s []string
	for _, c := range calls {
		s = append(s, c.Method+" "+c.Path)
	}
	return strings.Join(s, ", ")
}

// noProcessesLeft fails unless every process in dir has ended within a few seconds:
// the fake's guest is a child of its own, ended by the kernel when the fake ends (its
// parent-death signal), which is not at once on a loaded machine; a real Firecracker's
// guest ends with its process.
func noProcessesLeft(t *testing.T, dir, after string) {
	t.Helper()
	var procs []string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if procs = processesIn(dir); len(procs) == 0 {
			return
		}
	}
	t.Fatalf("processes left after %s: %v", after, procs)
}

// processesIn lists the processes whose working directory is in dir (the fake
// firecracker and its guest both run in the sandbox's directory).
func processesIn(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if _, rest, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(rest, "Z") {
				continue
			}
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		found = append(found, e.Name()+" "+strings.TrimSpace(string(comm)))
	}
	return found
}

func wantState(t *testing.T, b backend.Backend, id backend.ID, want backend.State) backend.Status {
	t.Helper()
	st, err := b.State(context.Background(), id)
	if err != nil || st.State != want {
		t.Fatalf("State = %+v, %v; want %s", st, err, want)
	}
	return st
}

// TestFirecrackerLifecycle drives the backend with --vmm firecracker through create,
// start, exec, stop, start, suspend, resume and destroy against the fake firecracker
// program, checking what the driver asked of it (the calls, their order and bodies)
// and that the guest answers through the vsock socket's handshake. No kernel runs: the
// fake's VM is the guest binary as a host process.
func TestFirecrackerLifecycle(t *testing.T) {
	b := fakeFirecracker(t, map[string]any{"kernel_args": "loglevel=7"})
	ctx := context.Background()
	id := backend.ID("fc")
	dir := filepath.Join(b.dir, string(id))
	sp := spec(t, id)
	sp.CPUs, sp.MemoryBytes = 2, 512<<20
	if err := b.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), id) })
	wantState(t, b, id, backend.StateCreated)
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	wantState(t, b, id, backend.StateRunning)
	if err := b.Start(ctx, id); err != nil {
		t.Fatalf("Start of a running VM: %v", err)
	}

	// The boot: the machine, the kernel, the disks, vsock, InstanceStart; no network.
	calls := configCalls(fcCalls(t, dir))
	want := "PUT /machine-config, PUT /boot-source, PUT /drives/root, PUT /drives/data, PUT /vsock, PUT /actions"
	if got := callNames(calls); got != want {
		t.Fatalf("the boot's calls: %s\nwant: %s", got, want)
	}
	for _, c := range fcCalls(t, dir) {
		if c.Status/100 != 2 {
			t.Fatalf("the fake refused %s %s: %d", c.Method, c.Path, c.Status)
		}
	}
	var md struct {
		Rootfs string `json:"rootfs"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "sandbox.json"))
	json.Unmarshal(data, &md)
	machine, source, root, dataDrive, vsock, start := calls[0].Body, calls[1].Body, calls[2].Body, calls[3].Body, calls[4].Body, calls[5].Body
	if machine["vcpu_count"] != 2.0 || machine["mem_size_mib"] != float64(512+256) {
		t.Errorf("machine config %v: want 2 vCPUs and 768 MiB (512 MiB and the VM's own 256)", machine)
	}
	args, _ := source["boot_args"].(string)
	if !strings.HasPrefix(args, "console=ttyS0 ") || !strings.Contains(args, " "+vmspec.VsockArg+" ") || !strings.HasSuffix(args, " loglevel=7 "+vmspec.KernelArgs) ||
		strings.Contains(args, "tsc") {
		t.Errorf("boot args %q: want the console, the vsock channel, kernel_args then init's arguments last, and no TCG clock", args)
	}
	for _, k := range []string{"kernel_image_path", "initrd_path"} {
		if p, _ := source[k].(string); !strings.HasPrefix(p, filepath.Join(b.dir, ".images")+"/") {
			t.Errorf("%s = %v: want the image cache's", k, source[k])
		}
	}
	if root["path_on_host"] != md.Rootfs || root["is_read_only"] != true || root["is_root_device"] != false {
		t.Errorf("root drive %v: want %s read-only, not the kernel's root", root, md.Rootfs)
	}
	if dataDrive["path_on_host"] != filepath.Join(dir, "data.ext4") || dataDrive["is_read_only"] != false {
		t.Errorf("data drive %v", dataDrive)
	}
	if vsock["guest_cid"] != 3.0 || vsock["uds_path"] != "vsock.sock" {
		t.Errorf("vsock %v", vsock)
	}
	if start["action_type"] != "InstanceStart" {
		t.Errorf("action %v", start)
	}

	// The guest answers, and it is the fake VM's: the guest runs in the sandbox's directory.
	c := connect(t, b, id)
	if got := run(t, c, "echo hello; readlink /proc/$PPID/cwd"); got != "hello\n"+filepath.Join(dir, "fctest-vm") {
		t.Fatalf("exec: %q", got)
	}
	// Init answers on its control port: the fake's has no cgroup, and says so.
	var notEnforced *backend.LimitsNotEnforcedError
	if _, err := b.Backend.(backend.LimitReader).Limits(ctx, id); !errors.As(err, &notEnforced) || !strings.Contains(err.Error(), "no cgroup") {
		t.Fatalf("Limits: %v, want the fake init's answer that it has no cgroup", err)
	}

	// Stop: init powers off (the fake's firecracker ends as Firecracker does when its
	// guest reboots); no process is left.
	if err := b.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	wantState(t, b, id, backend.StateStopped)
	noProcessesLeft(t, dir, "Stop")
	if conn, err := b.Dial(ctx, id); err == nil {
		conn.Close()
		t.Fatal("Dial of a stopped VM succeeded")
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	c = connect(t, b, id)
	run(t, c, "echo again")

	// Suspend: pause, a full snapshot beside the data disk, the process ended.
	before := len(fcCalls(t, dir))
	if err := b.Backend.(backend.Suspender).Suspend(ctx, id); err != nil {
		t.Fatal(err)
	}
	wantState(t, b, id, backend.StateSuspended)
	noProcessesLeft(t, dir, "Suspend")
	saved := filepath.Join(dir, "vmstate")
	suspend := configCalls(fcCalls(t, dir)[before:])
	if got := callNames(suspend); got != "PATCH /vm, PUT /snapshot/create" {
		t.Fatalf("the suspend's calls: %s", got)
	}
	if suspend[0].Body["state"] != "Paused" || suspend[1].Body["snapshot_type"] != "Full" ||
		suspend[1].Body["snapshot_path"] != saved || suspend[1].Body["mem_file_path"] != saved+".mem" {
		t.Fatalf("the suspend's bodies: %v", suspend)
	}
	for _, f := range []string{saved, saved + ".mem"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the snapshot: %v", err)
		}
	}

	// Start resumes: a fresh process loads the snapshot, resuming the VM, and is not
	// configured or started otherwise.
	before = len(fcCalls(t, dir))
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	if st := wantState(t, b, id, backend.StateRunning); st.Detail != "" {
		t.Fatalf("resumed with a note: %s", st.Detail)
	}
	resume := configCalls(fcCalls(t, dir)[before:])
	if got := callNames(resume); got != "PUT /snapshot/load" {
		t.Fatalf("the resume's calls: %s", got)
	}
	mem, _ := resume[0].Body["mem_backend"].(map[string]any)
	if resume[0].Body["snapshot_path"] != saved || resume[0].Body["resume_vm"] != true || mem["backend_type"] != "File" || mem["backend_path"] != saved+".mem" {
		t.Fatalf("snapshot load: %v", resume[0].Body)
	}
	for _, f := range []string{saved, saved + ".mem"} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("%s is left after the resume", f)
		}
	}
	c = connect(t, b, id)
	run(t, c, "echo resumed")

	// A firecracker killed behind paddock's back: an error saying so, then Start boots.
	var fcPid int
	for _, p := range processesIn(dir) {
		if n, comm, _ := strings.Cut(p, " "); !strings.HasPrefix(comm, "paddock") {
			fcPid, _ = strconv.Atoi(n)
		}
	}
	if fcPid == 0 {
		t.Fatalf("no firecracker process among %v", processesIn(dir))
	}
	syscall.Kill(fcPid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _ := b.State(ctx, id)
		if st.State == backend.StateError && strings.Contains(st.Detail, "firecracker process ended unexpectedly") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("State after the kill: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	c = connect(t, b, id)
	run(t, c, "echo booted")

	if err := b.Destroy(ctx, id); err != nil {
		t.Fatal(err)
	}
	wantState(t, b, id, backend.StateMissing)
	noProcessesLeft(t, dir, "Destroy")
}

// TestFirecrackerVsockHandshake: the fake's vsock socket takes a connection to a guest
// port only after "CONNECT PORT\n", answering "OK HOSTPORT\n"; a malformed request or
// a port nothing listens on is closed, as Firecracker's muxer does.
func TestFirecrackerVsockHandshake(t *testing.T) {
	b := fakeFirecracker(t, nil)
	id := backend.ID("fcvsock")
	startSandbox(t, b, id)
	sock := filepath.Join(b.dir, string(id), "vsock.sock")
	try := func(req string) string {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, req)
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			return "closed"
		}
		return line
	}
	for _, req := range []string{"CONNECT x\n", "connect 1024\n", "CONNECT  1024\n", "CONNECT 1024 \n", "CONNECT 9999\n", strings.Repeat("A", 40) + "\n"} {
		if got := try(req); got != "closed" {
			t.Errorf("%q: answered %q, want the connection closed", req, got)
		}
	}
	for _, port := range []int{vmspec.GuestVsockPort, vmspec.ControlVsockPort} {
		got := try(fmt.Sprintf("CONNECT %d\n", port))
		n, ok := strings.CutPrefix(strings.TrimSuffix(got, "\n"), "OK ")
		if p, err := strconv.ParseUint(n, 10, 32); !ok || err != nil || p < 1<<30 {
			t.Errorf("CONNECT %d: %q, want OK and a host port from 2^30", port, got)
		}
	}
}

// TestFirecrackerJailer: under the jailer (the fake's, which checks its arguments and
// has the fake firecracker take every path as inside the chroot), the VM's files are
// linked into the chroot and named by their paths there, the data disk is the same
// file as the sandbox's and the jailed user's, and suspend and resume move the
// snapshot out of the chroot and back.
func TestFirecrackerJailer(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the jailer needs root (its chroot and the data disk are given to its user)")
	}
	progs := programs(t, "firecracker", "jailer")
	b := fakeFirecracker(t, map[string]any{"firecracker": progs[0], "jailer": progs[1], "jailer_uid": 1000, "jailer_gid": 1000})
	ctx := context.Background()
	id := backend.ID("jailed")
	dir := filepath.Join(b.dir, string(id))
	startSandbox(t, b, id)
	root := filepath.Join(dir, "jail/firecracker/paddock-jailed/root")
	calls := configCalls(fcCalls(t, dir))
	if got := callNames(calls); got != "PUT /machine-config, PUT /boot-source, PUT /drives/root, PUT /drives/data, PUT /vsock, PUT /actions" {
		t.Fatalf("the boot's calls: %s", got)
	}
	if calls[1].Body["kernel_image_path"] != "/vmlinux" || calls[1].Body["initrd_path"] != "/initrd.cpio" ||
		calls[2].Body["path_on_host"] != "/rootfs.ext4" || calls[3].Body["path_on_host"] != "/data.ext4" || calls[4].Body["uds_path"] != "/vsock.sock" {
		t.Fatalf("paths in the chroot: %v", calls)
	}
	var inJail, own syscall.Stat_t
	if err := syscall.Stat(filepath.Join(root, "data.ext4"), &inJail); err != nil {
		t.Fatal(err)
	}
	syscall.Stat(filepath.Join(dir, "data.ext4"), &own)
	if inJail.Ino != own.Ino || inJail.Uid != 1000 || inJail.Gid != 1000 {
		t.Fatalf("the chroot's data disk: inode %d (the sandbox's %d), owner %d:%d; want the same file, 1000's", inJail.Ino, own.Ino, inJail.Uid, inJail.Gid)
	}
	c := connect(t, b, id)
	run(t, c, "echo jailed")

	if err := b.Backend.(backend.Suspender).Suspend(ctx, id); err != nil {
		t.Fatal(err)
	}
	wantState(t, b, id, backend.StateSuspended)
	for _, f := range []string{"vmstate", "vmstate.mem"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("the snapshot beside the data disk: %v", err)
		}
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	calls = configCalls(fcCalls(t, dir))
	load := calls[len(calls)-1]
	if load.Path != "/snapshot/load" || load.Body["snapshot_path"] != "/vmstate" {
		t.Fatalf("the resume: %s %v", load.Path, load.Body)
	}
	for _, f := range []string{filepath.Join(dir, "vmstate"), filepath.Join(root, "vmstate"), filepath.Join(root, "vmstate.mem")} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("%s is left after the resume", f)
		}
	}
	c = connect(t, b, id)
	run(t, c, "echo resumed")
	if err := b.Destroy(ctx, id); err != nil {
		t.Fatal(err)
	}
	noProcessesLeft(t, dir, "Destroy")
}
