package microvm

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"
	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/atomicfile"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/consolekeep"
	"github.com/paddockhq/paddock/internal/portmux"
	"github.com/paddockhq/paddock/internal/vmspec"
)

// qemuVMM runs VMs under QEMU's microvm machine: a daemonized qemu-system-x86_64 per
// sandbox, its pid in the sandbox's directory, QMP for its state and its end.
type qemuVMM struct{ m *MicroVM }

// Files of a sandbox's directory, for QEMU.
const (
	qemuPid = "qemu.pid" // QEMU's own, which it removes as it begins to exit
	// vmPid is QEMU's pid and start time, kept until the process has ended: a monitor
	// that removed its pid file may still hold the VM's disks and sockets for a while.
	vmPid         = "vm.pid"
	qemuLog       = "qemu.log" // what QEMU says once it runs detached
	qmpSocket     = "qmp.sock"
	guestSocket   = "guest.sock"
	controlSocket = "control.sock"
)

// memoryOverhead is what a VM has beyond its sandbox's memory limit: the kernel, init,
// the guest, the page cache.
const memoryOverhead = 256 << 20

func (q *qemuVMM) available(ctx context.Context) error {
	if _, err := exec.LookPath(q.m.settings.QEMU); err != nil {
		return &backend.UnavailableError{Backend: Name, Reason: "QEMU (" + q.m.settings.QEMU + ") is not installed",
			Fix: "sudo apt-get install qemu-system-x86"}
	}
	return q.m.guestFilesAvailable()
}

// guestFilesAvailable says whether what every monitor boots can be made here: the
// kernel, and mke2fs for the root and data disks.
func (m *MicroVM) guestFilesAvailable() error {
	if _, err := findKernel(m.settings.Kernel); err != nil {
		return &backend.UnavailableError{Backend: Name, Reason: err.Error(),
			Fix: "sudo apt-get install linux-image-amd64 (the VMs boot Debian's kernel), or set kernel in [backends.microvm]"}
	}
	if _, err := exec.LookPath(mke2fs()); err != nil {
		return &backend.UnavailableError{Backend: Name, Reason: "mke2fs is not installed", Fix: "sudo apt-get install e2fsprogs"}
	}
	return nil
}

// accel is the accelerator VMs run with: KVM when /dev/kvm opens and the processor
// offers virtualization (a nested VM may have the device with none behind it), else
// TCG, QEMU's emulator; why says why not KVM.
func (q *qemuVMM) accel() (accel, why string) {
	switch q.m.settings.Accel {
	case "kvm", "tcg":
		return q.m.settings.Accel, "accel = \"" + q.m.settings.Accel + "\" in [backends.microvm]"
	}
	return kvmUsable()
}

// kvmUsable says whether KVM can run VMs here, and why not.
func kvmUsable() (accel, why string) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return "tcg", "/dev/kvm: " + errors.Unwrap(err).Error()
	}
	f.Close()
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(cpuinfo), "\n") {
		if strings.HasPrefix(line, "flags") {
			for _, flag := range strings.Fields(line) {
				if flag == "vmx" || flag == "svm" {
					return "kvm", ""
				}
			}
			break
		}
	}
	return "tcg", "/dev/kvm is there but the processor shows no virtualization (vmx or svm): nested virtualization is off"
}

// bootFiles returns the kernel to boot (unpacked once) and the initramfs with the
// sandbox's guest binary (written once per binary).
func (m *MicroVM) bootFiles(md meta) (kernelELF, initrd, release string, err error) {
	k, kernelELF, err := m.kernelFile()
	if err != nil {
		return "", "", "", err
	}
	m.imageMu.Lock()
	defer m.imageMu.Unlock()
	sum := md.GuestSHA256
	if sum == "" {
		if sum, err = backend.FileSHA256(md.GuestBinary); err != nil {
			return "", "", "", fmt.Errorf("the guest binary: %w", err)
		}
	}
	initrd = filepath.Join(m.imageDir(), "initrd-"+initramfsFormat+"-"+k.Release+"-"+sum[:16]+".cpio")
	if !exists(initrd) {
		if got, err := backend.FileSHA256(md.GuestBinary); err != nil || got != sum {
			return "", "", "", fmt.Errorf("the guest binary %s does not have the sha256 %s (%v)", md.GuestBinary, sum, err)
		}
		if err := writeInitramfs(initrd, md.GuestBinary, k); err != nil {
			return "", "", "", err
		}
	}
	return kernelELF, initrd, k.Release, nil
}

// kernelFile returns the kernel VMs boot and its ELF image, unpacked once into the
// image cache.
func (m *MicroVM) kernelFile() (kernel, string, error) {
	k, err := findKernel(m.settings.Kernel)
	if err != nil {
		return k, "", err
	}
	m.imageMu.Lock()
	defer m.imageMu.Unlock()
	if err := os.MkdirAll(m.imageDir(), 0o700); err != nil {
		return k, "", err
	}
	elf := filepath.Join(m.imageDir(), "vmlinux-"+k.Release)
	if !exists(elf) {
		if err := unpackKernel(k.Image, elf); err != nil {
			return k, "", err
		}
	}
	return k, elf, nil
}

// vmSize is the VM's processors and memory (MiB) for its limits.
func vmSize(l backend.Limits) (cpus int, memMiB int64) {
	cpus = max(1, int(math.Ceil(l.CPUs)))
	cpus = min(cpus, runtime.NumCPU())
	return cpus, (l.MemoryBytes + memoryOverhead + (1<<20 - 1)) >> 20
}

// tscKHz is the host's processor clock in kHz, which the guest's kernel is told: under
// TCG it cannot measure it (microvm has no HPET), and measuring against the PIT on a
// busy host sometimes fails and hangs the boot.
func tscKHz() int {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "cpu MHz" {
			if mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && mhz > 0 {
				return int(mhz * 1000)
			}
		}
	}
	return 0
}

// kernelCmdline is the guest kernel's command line under either monitor: the serial
// console with warnings and worse on it (a boot says one line more than with quiet),
// no wait on a panic, the processor's clock under TCG, the words of extra (a monitor's
// own, then kernel_args), and last the arguments the kernel passes to init.
//
// Under TCG the guest's TSC is the host's counter (steady, and paused with the VM), but
// QEMU's processor does not say it is invariant, so the kernel would not use it and
// would keep time with refined-jiffies: by counting timer ticks, which a busy host
// delivers late, and which wake an idle VM 250 times a second. tsc=reliable makes the
// TSC the clock, with tickless idle.
func kernelCmdline(accel string, extra ...string) string {
	cmdline := "console=ttyS0 loglevel=5 panic=-1 reboot=t"
	if accel == "tcg" {
		if khz := tscKHz(); khz > 0 {
			cmdline += " tsc_early_khz=" + strconv.Itoa(khz)
		}
		cmdline += " tsc=reliable"
	}
	for _, w := range extra {
		cmdline += " " + w
	}
	return cmdline + " " + vmspec.KernelArgs
}

// args is QEMU's command line for a sandbox's VM; with incoming, the VM's state
// (memory and devices) is loaded from that file rather than booted, and the VM waits,
// paused, for a cont.
func (q *qemuVMM) args(dir, kernelELF, initrd string, md meta, incoming string) []string {
	accel, _ := q.accel()
	cpus, mem := vmSize(md.Limits)
	if accel == "tcg" {
		// One processor under TCG: VMs of two, each a thread of QEMU's multi-threaded
		// TCG, hung at boot on a loaded host (both processors spinning, the console
		// stopped mid-boot; three times in many boots). The sandbox's cgroup keeps
		// its limit; under KVM the VM has the processors of its limit.
		cpus = 1
	}
	machine := "microvm,accel=" + accel + ",pit=on,pic=on,rtc=on"
	cpu := q.m.settings.CPU
	switch {
	case cpu != "":
	case accel == "kvm":
		cpu = "host"
	default:
		cpu = "max"
	}
	cmdline := kernelCmdline(accel, strings.Fields(q.m.settings.KernelArgs)...)
	a := []string{
		"-name", "paddock-" + md.Name,
		"-machine", machine, "-cpu", cpu, "-smp", strconv.Itoa(cpus), "-m", strconv.FormatInt(mem, 10) + "M",
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-kernel", kernelELF, "-initrd", initrd, "-append", cmdline,
		// The console is a socket the daemon reads while it runs (console.go): QEMU
		// drops what the VM writes to it while nobody is connected.
		"-chardev", "socket,id=console,path=" + consoleSocket + ",server=on,wait=off", "-serial", "chardev:console",
		"-drive", "id=root,file=" + md.Rootfs + ",format=raw,if=none,readonly=on",
		"-device", "virtio-blk-device,drive=root",
		"-drive", "id=data,file=" + filepath.Join(dir, dataDisk) + ",format=raw,if=none,discard=unmap",
		"-device", "virtio-blk-device,drive=data",
		"-device", "virtio-serial-device,max_ports=3",
		// Sockets by relative paths (QEMU runs in dir until it daemonizes): a socket's
		// address holds 108 bytes, a sandbox's directory may be longer.
		"-chardev", "socket,id=guest,path=" + guestSocket + ",server=on,wait=off",
		"-device", "virtserialport,chardev=guest,name=" + vmspec.GuestPort,
		"-chardev", "socket,id=control,path=" + controlSocket + ",server=on,wait=off",
		"-device", "virtserialport,chardev=control,name=" + vmspec.ControlPort,
		"-qmp", "unix:" + qmpSocket + ",server=on,wait=off",
		"-pidfile", filepath.Join(dir, qemuPid), "-D", filepath.Join(dir, qemuLog), "-daemonize",
	}
	if incoming != "" {
		a = append(a, "-S", "-incoming", "exec:cat "+shellQuote(incoming))
	}
	if md.OpenNetwork {
		a = append(a, "-netdev", userNetdev, "-device", "virtio-net-device,netdev=n0")
	}
	return a
}

// userNetdev is QEMU's user-mode network (slirp) of a VM with an open network, laid
// out as vmspec.UserNetwork says and the VM's init configures it: the host's loopback
// at the gateway, a resolver forwarding to the host's, IPv4 only.
var userNetdev = func() string {
	n := vmspec.UserNetwork
	return "user,id=n0,ipv6=off,net=" + netip.MustParsePrefix(n.Address).Masked().String() + ",host=" + n.Gateway + ",dns=" + n.DNS
}()

func (q *qemuVMM) boot(ctx context.Context, id backend.ID, md meta) error {
	return q.launch(ctx, id, md, "")
}

// launch starts the sandbox's QEMU, detached; with incoming, loading the VM's state
// from that file (which goes on after launch returns).
func (q *qemuVMM) launch(ctx context.Context, id backend.ID, md meta, incoming string) error {
	dir := q.m.sandboxDir(id)
	q.m.consoleWritten(id) // the last QEMU's, which has ended
	for _, s := range []string{qmpSocket, guestSocket, controlSocket, consoleSocket, qemuPid, vmPid, consoleLog, qemuLog} {
		os.Remove(filepath.Join(dir, s))
	}
	kernelELF, initrd, _, err := q.m.bootFiles(md)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, q.m.settings.QEMU, q.args(dir, kernelELF, initrd, md, incoming)...)
	cmd.Dir = dir
	// Its own session: a VM outlives the daemon that started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("microvm: start QEMU: %v: %s", err, strings.TrimSpace(string(out)))
	}
	// Connected at once: the kernel writes its console from the start of its log
	// once it has one, so the boot's first lines come after this.
	q.m.followConsole(id, nil)
	return notePid(dir)
}

// notePid keeps the pid QEMU wrote, with its process's start time, in vmPid. A QEMU
// that has already ended (it could not load a saved state, say) leaves nothing to keep:
// pid then finds no process, and its caller reads why in QEMU's log.
func notePid(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, qemuPid))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("microvm: QEMU's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return fmt.Errorf("microvm: QEMU's pid file says %q", data)
	}
	start, err := backend.ProcStartTime(pid)
	if err != nil {
		return nil
	}
	return atomicfile.Write(filepath.Join(dir, vmPid), []byte(fmt.Sprintf("%d %d\n", pid, start)), 0o600)
}

// pid is the sandbox's QEMU process until it has ended (a zombie counts as ended): the
// one vmPid names by pid and start time (a pid is reused).
func (q *qemuVMM) pid(id backend.ID) int {
	dir := q.m.sandboxDir(id)
	if data, err := os.ReadFile(filepath.Join(dir, vmPid)); err == nil {
		var pid int
		var start uint64
		if _, err := fmt.Sscan(string(data), &pid, &start); err != nil || pid <= 0 {
			return 0
		}
		if now, err := backend.ProcStartTime(pid); err != nil || now != start {
			return 0
		}
		return pid
	}
	// A VM started before vmPid was kept: QEMU's own pid file, checked to be QEMU
	// running from this sandbox's directory (a pid is reused).
	data, err := os.ReadFile(filepath.Join(dir, qemuPid))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), filepath.Join(dir, dataDisk)) {
		return 0
	}
	if _, err := backend.ProcStartTime(pid); err != nil {
		return 0
	}
	return pid
}

func (q *qemuVMM) status(ctx context.Context, id backend.ID) (bool, string, error) {
	if q.pid(id) == 0 {
		return false, "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := dialQMP(ctx, filepath.Join(q.m.sandboxDir(id), qmpSocket))
	if err != nil {
		if q.pid(id) == 0 {
			return false, "", nil
		}
		return true, "not answering its monitor (" + err.Error() + ")", nil
	}
	defer c.Close()
	var st qmpStatus
	if err := c.execute("query-status", nil, &st); err != nil {
		return true, "not answering its monitor (" + err.Error() + ")", nil
	}
	if st.Running {
		return true, "", nil
	}
	return true, st.Status, nil
}

func (q *qemuVMM) halt(ctx context.Context, id backend.ID) error {
	pid := q.pid(id)
	if pid == 0 {
		return nil
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if c, err := dialQMP(qctx, filepath.Join(q.m.sandboxDir(id), qmpSocket)); err == nil {
		c.execute("quit", nil, nil)
		c.Close()
	}
	cancel()
	if waitGone(ctx, q.pid, id, 5*time.Second) {
		return nil
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if !waitGone(ctx, q.pid, id, 10*time.Second) {
		return fmt.Errorf("microvm: QEMU (pid %d) did not end", pid)
	}
	return nil
}

// waitGone waits until pid(id) reports no process, up to d.
func waitGone(ctx context.Context, pid func(backend.ID) int, id backend.ID, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for pid(id) != 0 {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func (q *qemuVMM) connect(ctx context.Context, id backend.ID) (*yamux.Session, error) {
	dir := q.m.sandboxDir(id)
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Duration(q.m.settings.StartTimeout)*time.Second)
	defer cancelTimeout()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	conn, err := dialUnix(ctx, filepath.Join(dir, guestSocket))
	if err != nil {
		return nil, fmt.Errorf("microvm: the VM's guest port: %w", err)
	}
	// The monitor ending (the VM crashed, or was killed) ends the wait, and so does a
	// kernel that went without its timer (it would wait for ever).
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
				if q.pid(id) == 0 {
					cancel(nil)
					return
				}
				if timerDisabled(filepath.Join(dir, consoleLog)) {
					cancel(errNoTimer)
					return
				}
			}
		}
	}()
	s, err := portmux.Client(ctx, conn)
	if err != nil {
		conn.Close()
		if errors.Is(context.Cause(ctx), errNoTimer) {
			return nil, fmt.Errorf("microvm: %w (the VM's console says: %s)", errNoTimer, lastConsoleLines(filepath.Join(dir, consoleLog), 8))
		}
		if q.pid(id) == 0 {
			q.m.consoleWritten(id)
			return nil, fmt.Errorf("microvm: the VM ended before its guest answered: %s", lastConsoleLines(filepath.Join(dir, consoleLog), 8))
		}
		report := q.processes(id)
		if report == "" {
			report = q.processorsReport(id)
		}
		return nil, fmt.Errorf("microvm: %w (the VM's console says: %s)%s", err, lastConsoleLines(filepath.Join(dir, consoleLog), 8), report)
	}
	return s, nil
}

// errNoTimer is a VM whose kernel went without its local APIC timer at boot: under TCG
// it measures that timer against the TSC for a tenth of a second, and a host too busy
// to run QEMU through that tenth makes the timer seem too slow to use. The kernel then
// has no timer that works on microvm: nothing that sleeps wakes, and the VM sits idle
// for ever with its guest never answering. Start boots such a VM again.
var errNoTimer = errors.New("the VM's kernel disabled its timer at boot (the host was too busy while the kernel measured it)")

// noTimerLine is what the kernel says as it goes without its timer.
const noTimerLine = "APIC frequency too slow, disabling apic timer"

// timerDisabled says whether the VM's console at path shows the kernel going without
// its timer.
func timerDisabled(path string) bool {
	data, err := backend.ReadEnd(path, consoleTail)
	return err == nil && strings.Contains(string(data), noTimerLine)
}

// processorsReport is what QEMU says of a VM whose init does not answer either, for an
// error: its run state, and each virtual processor's thread on the host with its state
// and the processor time it has used, which tell a VM that spins from one that waits.
func (q *qemuVMM) processorsReport(id backend.ID) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dialQMP(ctx, filepath.Join(q.m.sandboxDir(id), qmpSocket))
	if err != nil {
		return " (nor does QEMU's monitor: " + err.Error() + ")"
	}
	defer c.Close()
	var st qmpStatus
	if err := c.execute("query-status", nil, &st); err != nil {
		return " (nor does QEMU's monitor: " + err.Error() + ")"
	}
	var cpus []struct {
		Index  int `json:"cpu-index"`
		Thread int `json:"thread-id"`
	}
	c.execute("query-cpus-fast", nil, &cpus)
	report := " (QEMU says the VM is " + st.Status
	for _, cpu := range cpus {
		state, used, err := backend.ProcCPU(fmt.Sprintf("/proc/%d/task/%d/stat", q.pid(id), cpu.Thread))
		if err != nil {
			state = "gone"
		}
		report += fmt.Sprintf("; processor %d: thread %d %s, %.1f s of processor time", cpu.Index, cpu.Thread, state, used.Seconds())
	}
	return report + ")"
}

// processes is what the VM's init says of its processes, for an error about a guest
// that does not answer, cut at maxProcessesReport bytes (a VM may run thousands);
// empty when init does not answer either.
func (q *qemuVMM) processes(id backend.ID) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	answer, err := q.control(ctx, id, vmspec.Processes)
	var list string
	if err != nil || json.Unmarshal(answer, &list) != nil {
		return ""
	}
	if len(list) > maxProcessesReport {
		list = strings.ToValidUTF8(list[:maxProcessesReport], "") + " ..."
	}
	return " (its processes: " + list + ")"
}

// control sends one request to the VM's init on its control port and returns the
// answer, skipping what an earlier request left unread.
func (q *qemuVMM) control(ctx context.Context, id backend.ID, req string) ([]byte, error) {
	if q.pid(id) == 0 {
		return nil, backend.ErrNotRunning
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := dialUnix(ctx, filepath.Join(q.m.sandboxDir(id), controlSocket))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return askInit(ctx, conn, req)
}

// askInit sends one request, tagged with a fresh nonce, to the VM's init on conn and
// returns the answer carrying that tag, skipping lines an earlier request left unread.
// An answer cut off by the end of the connection still counts.
func askInit(ctx context.Context, conn net.Conn, req string) ([]byte, error) {
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	nonce := make([]byte, 8)
	rand.Read(nonce)
	tag := hex.EncodeToString(nonce)
	if _, err := fmt.Fprintf(conn, "%s %s\n", tag, req); err != nil {
		return nil, err
	}
	br := bufio.NewReader(conn)
	for {
		line, err := readLine(br, maxInitLine)
		if answer, ok := strings.CutPrefix(line, tag+" "); ok && (err == nil || errors.Is(err, io.EOF)) {
			return []byte(answer), nil
		}
		if err != nil {
			return nil, fmt.Errorf("microvm: the VM's init did not answer %q: %w", req, err)
		}
	}
}

// maxProcessesReport is how much of the VM's process list an error carries.
const maxProcessesReport = 4 << 10

// maxInitLine bounds a line read from a VM's init: what runs in a VM is not trusted to
// end its lines.
const maxInitLine = 1 << 20

// readLine reads up to and including the next newline, failing on a line longer than
// max.
func readLine(br *bufio.Reader, max int) (string, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) > max {
			return "", fmt.Errorf("a line longer than %d bytes", max)
		}
		line = append(line, part...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return string(line), err
		}
	}
}

// powerOff asks the VM's init to power off and waits for the monitor to end; after 30
// seconds, it is ended.
func (m *MicroVM) powerOff(ctx context.Context, id backend.ID, d vmmDriver) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := d.control(cctx, id, vmspec.Poweroff)
	cancel()
	if err == nil {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			alive, _, _ := d.status(ctx, id)
			if !alive {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	m.log.Warn("the VM did not power off; ending it", "sandbox", id, "err", err)
	return d.halt(ctx, id)
}

// dialUnix connects to a unix socket, through /proc/self/fd when its path is longer
// than a socket address holds.
func dialUnix(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	if len(path) < 100 {
		return d.DialContext(ctx, "unix", path)
	}
	dir, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	return d.DialContext(ctx, "unix", fmt.Sprintf("/proc/self/fd/%d/%s", dir, filepath.Base(path)))
}

// lastConsoleLines is the end of the VM's console, for errors.
func lastConsoleLines(path string, n int) string {
	data, err := backend.ReadEnd(path, consoleTail)
	if err != nil || len(strings.TrimSpace(string(data))) == 0 {
		return "(nothing)"
	}
	return tail(strings.ReplaceAll(string(data), "\r", ""), n)
}

// The VM writes its console as much as it likes (a guest with root can write its serial
// port without end): its last lines are read from its last consoleTail bytes, and the
// file is cut back to those once it passes consoleMax: as the daemon writes it, for a
// QEMU VM (console.go); as the VM's own console-keep process writes it, for Firecracker,
// daemon or not (firecrackerVMM.startConsoleKeep); for a QEMU started before its console was
// a socket, which writes the file itself, looked at every consoleCheck while the daemon
// is connected to the VM.
const (
	consoleTail  = consolekeep.Tail
	consoleMax   = 4 << 20
	consoleCheck = 5 * time.Second
)

// keepConsole keeps the console file at path under consoleMax until done is closed.
func keepConsole(path string, done <-chan struct{}) {
	t := time.NewTicker(consoleCheck)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			trimConsole(path, consoleMax)
		}
	}
}

// trimConsole cuts the console file at path back to its last consoleTail bytes when it
// is larger than max. The VMM appends to it, so what it writes meanwhile lands after.
func trimConsole(path string, max int64) error { return consolekeep.Trim(path, max) }

// lastConsoleLine is the console's last line, when it has one.
func lastConsoleLine(path string) string {
	s := lastConsoleLines(path, 1)
	if s == "(nothing)" {
		return ""
	}
	return s
}
