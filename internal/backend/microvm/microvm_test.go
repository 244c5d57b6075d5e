package microvm_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/backendtest"
	"github.com/paddockhq/paddock/internal/backend/microvm"
	"github.com/paddockhq/paddock/internal/guestclient"
)

// TestConformance runs the shared suite on QEMU microvm VMs (under TCG where KVM does
// not work), nothing skipped: no network device, and inside the VM the sandbox's user
// has no capability, no_new_privs, the system call filter and a cgroup of its limits.
func TestConformance(t *testing.T) {
	b := newBackend(t, nil)
	backendtest.Run(t, backendtest.Harness{
		Backend: b,
		Spec:    func(id backend.ID) backend.Spec { return spec(t, id) },
		Leftovers: func(id backend.ID) []string {
			var left []string
			if _, err := os.Stat(filepath.Join(b.Dir(), string(id))); err == nil {
				left = append(left, "directory "+filepath.Join(b.Dir(), string(id)))
			}
			left = append(left, qemuProcesses(filepath.Join(b.Dir(), string(id)))...)
			return left
		},
		Dir: b.Dir(),
	})
}

// qemuProcesses lists the QEMU processes running from a sandbox's directory.
func qemuProcesses(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir+"/") && strings.Contains(string(cmdline), "qemu") {
			found = append(found, "process "+e.Name())
		}
	}
	return found
}

// TestKilledQEMU: a VM whose QEMU process is killed behind paddock's back shows as an
// error saying so, Dial fails rather than hangs, and Start boots it again with its
// workspace.
func TestKilledQEMU(t *testing.T) {
	b := newBackend(t, nil)
	ctx := context.Background()
	id := backend.ID("killed")
	startSandbox(t, b, id)
	c := connect(t, b, id)
	run(t, c, "echo before > /workspace/f && sync")
	procs := qemuProcesses(filepath.Join(b.Dir(), string(id)))
	if len(procs) != 1 {
		t.Fatalf("QEMU processes of the sandbox: %v, want one", procs)
	}
	pid, _ := strconv.Atoi(strings.TrimPrefix(procs[0], "process "))
	syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	var st backend.Status
	for time.Now().Before(deadline) {
		var err error
		if st, err = b.State(ctx, id); err != nil {
			t.Fatal(err)
		}
		if st.State != backend.StateRunning {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("State after QEMU was killed: %+v", st)
	if st.State != backend.StateError || !strings.Contains(st.Detail, "ended unexpectedly") || !strings.Contains(st.Detail, "start") {
		t.Fatalf("State after QEMU was killed = %+v, want an error saying it ended and to start it", st)
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if conn, err := b.Dial(dctx, id); err == nil {
		// The stream may open on the session the daemon still holds; it must not work.
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte("x")); err == nil {
			if _, err := conn.Read(make([]byte, 1)); err == nil {
				t.Fatal("a connection to a killed VM's guest answered")
			}
		}
		conn.Close()
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatalf("Start after QEMU was killed: %v", err)
	}
	if st, _ := b.State(ctx, id); st.State != backend.StateRunning {
		t.Fatalf("State after Start = %+v, want running", st)
	}
	c = connect(t, b, id)
	if got := run(t, c, "cat /workspace/f"); got != "before" {
		t.Fatalf("after recovery the workspace holds %q, want what was synced before the kill", got)
	}
}

// TestStopKeepsWorkspaceNotProcesses: stop powers the VM off (its init syncs the
// disks), start boots it again with /workspace, the home and what was installed over
// the root file system, and nothing of what ran.
func TestStopStartKeepsDisk(t *testing.T) {
	b := newBackend(t, nil)
	ctx := context.Background()
	id := backend.ID("stopstart")
	startSandbox(t, b, id)
	c := connect(t, b, id)
	// No sync: the power off must write it all.
	run(t, c, "echo work > /workspace/w && echo cfg > ~/.cfg && dd if=/dev/urandom of=/workspace/big bs=1M count=8 2>/dev/null && sha256sum /workspace/big > /tmp/sum && cat /tmp/sum > ~/sum")
	run(t, c, "nohup sleep 600 >/dev/null 2>&1 &")
	if err := b.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.State(ctx, id); st.State != backend.StateStopped {
		t.Fatalf("State after Stop = %+v", st)
	}
	if procs := qemuProcesses(filepath.Join(b.Dir(), string(id))); len(procs) != 0 {
		t.Fatalf("QEMU still runs after Stop: %v", procs)
	}
	if err := b.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	c = connect(t, b, id)
	if got := run(t, c, "cat /workspace/w ~/.cfg; sha256sum -c ~/sum >/dev/null && echo same; pgrep -c sleep || true; ls /tmp"); got != "work\ncfg\nsame\n0" {
		t.Fatalf("after stop and start: %q, want the workspace and home kept, no process and an empty /tmp", got)
	}
}

func run(t *testing.T, c *guestclient.Client, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut strings.Builder
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", script}, Stdout: &out, Stderr: &errOut})
	if err != nil || code != 0 {
		t.Fatalf("%q: exit %d, %v: %s%s", script, code, err, out.String(), errOut.String())
	}
	return strings.TrimSpace(out.String())
}

// TestDaemonRestart: a daemon that goes leaves the VM running; the next one reaches
// the same guest over the port (a new session after the old one's leftovers), and what
// ran is still there.
func TestDaemonRestart(t *testing.T) {
	b := newBackend(t, nil)
	ctx := context.Background()
	id := backend.ID("restart")
	startSandbox(t, b, id)
	c := connect(t, b, id)
	run(t, c, "nohup sleep 600 >/dev/null 2>&1 & echo $! > /tmp/sleeper")
	// A stream left mid-transfer: the next daemon's session starts after its bytes.
	go c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", "yes | head -c 50000000"}, Stdout: io.Discard})
	time.Sleep(300 * time.Millisecond)
	b.Close()
	b2, err := microvm.New(backend.Env{Dir: b.Dir()})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := b2.State(ctx, id); err != nil || st.State != backend.StateRunning {
		t.Fatalf("State from the next daemon = %+v, %v", st, err)
	}
	if err := b2.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	c2 := connect(t, b2, id)
	if got := run(t, c2, "kill -0 $(cat /tmp/sleeper) && echo alive"); got != "alive" {
		t.Fatalf("after the daemon's restart: %q", got)
	}
	b2.Close()
}

// TestOpenNetwork: a sandbox made with --network open has a network interface on the
// monitor's user-mode network, reaches a service on the host's loopback at the
// gateway, 10.0.2.2, as a bwrap sandbox reaches it at 127.0.0.1, has 10.0.2.3 as its
// resolver, and has all of it again after stop and start; its own 127.0.0.1 is the
// VM's.
func TestOpenNetwork(t *testing.T) {
	b := newBackend(t, nil)
	ctx := context.Background()
	var mu sync.Mutex
	var seen []string
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		fmt.Fprintf(w, "hello from the host at %s\n", r.URL.Path)
	}))
	defer host.Close()
	port := host.Listener.Addr().(*net.TCPAddr).Port
	id := backend.ID("open")
	sp := spec(t, id)
	sp.OpenNetwork = true
	if err := b.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), id) })
	check := func(when string) {
		t.Helper()
		if err := b.Start(ctx, id); err != nil {
			t.Fatal(err)
		}
		c := connect(t, b, id)
		got := run(t, c, fmt.Sprintf("curl -sS --max-time 30 http://10.0.2.2:%d/%s", port, when))
		if got != "hello from the host at /"+when {
			t.Fatalf("%s: curl of the host's service at 10.0.2.2 answered %q", when, got)
		}
		ifaces := run(t, c, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' '")
		if ifaces != "eth0 lo" {
			t.Fatalf("%s: interfaces %q, want eth0 and lo", when, ifaces)
		}
		if got := run(t, c, "cat /etc/resolv.conf"); got != "nameserver 10.0.2.3" {
			t.Fatalf("%s: /etc/resolv.conf is %q", when, got)
		}
		// The VM's loopback is its own: the host's service is not at 127.0.0.1.
		if got := run(t, c, fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d' 2>/dev/null && echo connected || echo refused", port)); got != "refused" {
			t.Fatalf("%s: the VM's 127.0.0.1:%d answered: %q", when, port, got)
		}
	}
	check("first-boot")
	if err := b.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	check("after-restart")
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, " ") != "/first-boot /after-restart" {
		t.Fatalf("the host's service saw %v, want one request per boot", seen)
	}
}

// TestGuestNotAnswering: a start whose guest never answers says, with its error, what
// the VM's processes are doing, as the VM's init sees them. Here the guest was stopped
// (SIGSTOP, from inside: it runs as the sandbox's user) and the daemon came back.
func TestGuestNotAnswering(t *testing.T) {
	b := newBackend(t, nil)
	ctx := context.Background()
	id := backend.ID("mute")
	startSandbox(t, b, id)
	c := connect(t, b, id)
	guestPid := strings.TrimSpace(run(t, c, "pgrep -f '^[^ ]+ [^ ]+ serve '"))
	if guestPid == "" {
		t.Fatal("no guest process found inside")
	}
	go c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", "sleep 0.2; kill -STOP " + guestPid}})
	// Stopped once it no longer answers: an emulated VM on a loaded machine may take well
	// over a second to get there (a fixed second let Start find it still answering).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.Exec(pctx, guestclient.ExecOptions{Argv: []string{"true"}})
		cancel()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the guest still answered a minute after it was stopped")
		}
	}
	b.Close()

	b2, err := microvm.New(backend.Env{Dir: b.Dir(), Options: map[string]any{"start_timeout": 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	err = b2.Start(ctx, id)
	if err == nil {
		t.Fatal("Start succeeded with the guest stopped")
	}
	// The stopped guest shows with its state, T (stopped): its threads wait nowhere.
	if !strings.Contains(err.Error(), "its processes: ") || !regexp.MustCompile(`\d+ paddock \[T`).MatchString(err.Error()) {
		t.Fatalf("Start's error does not say what the guest is doing: %v", err)
	}
}

// TestVMNotAnswering: a VM whose guest and init both stay silent (here its monitor has
// paused it) fails a dial saying what QEMU says of it and of each of its processors.
// Under TCG the VM has one processor.
func TestVMNotAnswering(t *testing.T) {
	b := newBackend(t, nil)
	ctx := context.Background()
	id := backend.ID("frozen")
	startSandbox(t, b, id)
	// Without KVM (here) the VM is emulated and has one processor, whatever its limit.
	if _, err := os.Stat("/dev/kvm"); err != nil {
		if n := run(t, connect(t, b, id), "nproc"); n != "1" {
			t.Fatalf("nproc in a VM under TCG: %s, want 1", n)
		}
	}
	b.Close()
	qmp(t, filepath.Join(b.Dir(), string(id), "qmp.sock"), "stop")

	b2, err := microvm.New(backend.Env{Dir: b.Dir(), Options: map[string]any{"start_timeout": 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	_, err = b2.Dial(ctx, id)
	if err == nil {
		t.Fatal("Dial succeeded with the VM paused")
	}
	if !strings.Contains(err.Error(), "QEMU says the VM is paused") ||
		!regexp.MustCompile(`processor 0: thread \d+ [RSD], \d+\.\d s of processor time`).MatchString(err.Error()) {
		t.Fatalf("Dial's error does not say what QEMU says of the VM: %v", err)
	}
}

// qmp runs one command on a QEMU monitor's socket.
func qmp(t *testing.T, socket, command string) {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if _, err := r.ReadString('\n'); err != nil { // the greeting
		t.Fatal(err)
	}
	for _, cmd := range []string{"qmp_capabilities", command} {
		fmt.Fprintf(conn, `{"execute": %q}`+"\n", cmd)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("qmp %s: %v", cmd, err)
			}
			if strings.Contains(line, `"return"`) {
				break
			}
			if strings.Contains(line, `"error"`) {
				t.Fatalf("qmp %s: %s", cmd, line)
			}
		}
	}
}

// TestKernelArgsRefused: kernel_args cannot take the place of paddock's init or its
// arguments.
func TestKernelArgsRefused(t *testing.T) {
	for _, args := range []string{"quiet -- sh", "init=/bin/sh", "rdinit=/bin/sh"} {
		_, err := microvm.New(backend.Env{Dir: t.TempDir(), Options: map[string]any{"kernel_args": args}})
		if err == nil || !strings.Contains(err.Error(), "kernel_args may not hold") {
			t.Errorf("kernel_args = %q: %v, want it refused", args, err)
		}
	}
}

// TestConsoleOnlyWhileTheDaemonReads: the VM's console reaches the host's disk only
// through the daemon, which keeps it bounded; what the VM writes there while no daemon
// runs is dropped, so nothing inside can fill the host's disk through it while the
// daemon is away. An unprivileged process inside makes the VM's init write to the
// console by killing the guest (init says so, and starts it again): once with the
// daemon gone, once with the next one reading.
func TestConsoleOnlyWhileTheDaemonReads(t *testing.T) {
	b := newBackend(t, nil)
	ctx := context.Background()
	id := backend.ID("console")
	startSandbox(t, b, id)
	log := filepath.Join(b.Dir(), string(id), "console.log")
	if data, _ := os.ReadFile(log); !strings.Contains(string(data), "paddock vm-init: starting the guest") {
		t.Fatalf("the console after the boot holds %q, want init's lines", data)
	}
	const ended = "paddock vm-init: the guest ended"
	// The guest has its own pid namespace, where a new one may have the old one's pid:
	// its start time tells them apart.
	guestPid := func(c *guestclient.Client) string {
		return run(t, c, "cut -d' ' -f1,22 /proc/$(pgrep -f '^[^ ]+ [^ ]+ serve ')/stat")
	}
	killGuest := "setsid sh -c 'sleep %s; pkill -KILL -f \"^[^ ]+ [^ ]+ serve \"' >/dev/null 2>&1 </dev/null &"
	c := connect(t, b, id)
	first := guestPid(c)
	run(t, c, fmt.Sprintf(killGuest, "2"))
	c.Close()
	b.Close()
	time.Sleep(5 * time.Second) // killed at 2 s, started again 0.2 s later

	b2, err := microvm.New(backend.Env{Dir: b.Dir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if err := b2.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	c2 := connect(t, b2, id)
	if second := guestPid(c2); second == first {
		t.Fatalf("the guest (pid and start time %s) was not killed while the daemon was away", first)
	}
	if data, _ := os.ReadFile(log); strings.Contains(string(data), ended) {
		t.Fatalf("what the VM wrote to its console with no daemon reached the host's disk: %q", data)
	}
	run(t, c2, fmt.Sprintf(killGuest, "0.2"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(log)
		if strings.Contains(string(data), ended) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with the daemon reading, the console never said %q: %q", ended, data)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTimerDisabledAtBoot: a VM whose kernel went without its timer at boot (it
// measured the timer while the host was too busy to run QEMU, here made certain by
// telling it the TSC runs at 1 MHz) would never answer; Start sees it on the console,
// boots it again, and in the end fails at once saying why, not after start_timeout.
func TestTimerDisabledAtBoot(t *testing.T) {
	b := newBackend(t, map[string]any{"kernel_args": "tsc_early_khz=1000", "start_timeout": 170})
	ctx := context.Background()
	id := backend.ID("notimer")
	if err := b.Create(ctx, spec(t, id)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Destroy(context.Background(), id) })
	began := time.Now()
	err := b.Start(ctx, id)
	took := time.Since(began)
	t.Logf("Start: %v, after %v", err, took.Round(time.Second))
	if err == nil || !strings.Contains(err.Error(), "disabled its timer") || !strings.Contains(err.Error(), "APIC frequency too slow") {
		t.Fatalf("Start of a VM whose kernel has no timer: %v, want an error saying so", err)
	}
	if took > 150*time.Second {
		t.Fatalf("Start took %v to fail: the wait ran to start_timeout", took)
	}
}
