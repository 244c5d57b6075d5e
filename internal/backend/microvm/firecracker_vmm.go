package microvm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/paddockhq/paddock/internal/atomicfile"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/backend/microvm/firecracker"
	"github.com/paddockhq/paddock/internal/portmux"
	"github.com/paddockhq/paddock/internal/vmspec"
)

// firecrackerVMM runs VMs under Firecracker: a firecracker process per sandbox, started
// in the sandbox's directory (its sockets by relative paths), configured and started
// through its API socket, the guest reached through its vsock device, whose host end is
// a unix socket where each connection says which guest port it wants.
//
// The guest's sessions are one vsock connection each, carrying a portmux session as the
// QEMU path's console port does: Dial, keepalives and a daemon coming back work alike
// for both monitors. Unlike a console port, each session is a connection of its own,
// so nothing of an old session is left in it; and a snapshot's restore, which resets the
// VM's vsock connections, only ends a session the next Dial replaces.
type firecrackerVMM struct{ m *MicroVM }

// Files of a sandbox's directory, for Firecracker.
const (
	fcSocket    = "fc.sock"
	fcPid       = "firecracker.pid"
	vsockSocket = "vsock.sock"
	// guestCID is the VM's vsock address; each VM has its own device and host socket,
	// so every VM may have the first one a guest can have.
	guestCID = 3
)

// memFile is where a suspended Firecracker VM's memory is, beside its state.
func memFile(state string) string { return state + ".mem" }

func (f *firecrackerVMM) available(ctx context.Context) error {
	if _, err := exec.LookPath(f.m.settings.Firecracker); err != nil {
		return &backend.UnavailableError{Backend: Name, Reason: "Firecracker (" + f.m.settings.Firecracker + ") is not installed",
			Fix: "install Firecracker's release binary (github.com/firecracker-microvm/firecracker/releases) on the PATH, or use --vmm qemu"}
	}
	if j := f.m.settings.Jailer; j != "" {
		if _, err := exec.LookPath(j); err != nil {
			return &backend.UnavailableError{Backend: Name, Reason: "Firecracker's jailer (" + j + ") is not installed",
				Fix: "install the jailer from Firecracker's release beside firecracker, or remove jailer from [backends.microvm]"}
		}
	}
	return f.m.guestFilesAvailable()
}

// instanceID is the VM's --id: the sandbox's ID, which pid checks look for.
func instanceID(id backend.ID) string { return "paddock-" + string(id) }

// jailed says whether Firecracker runs under its jailer.
func (f *firecrackerVMM) jailed() bool { return f.m.settings.Jailer != "" }

// jailBase is the jailer's --chroot-base-dir: in the sandbox's directory, which Destroy
// removes.
func (f *firecrackerVMM) jailBase(id backend.ID) string {
	return filepath.Join(f.m.sandboxDir(id), "jail")
}

// fcRoot is the host directory holding what Firecracker names by its own paths: the
// sandbox's directory, its working directory; or under the jailer, its chroot,
// BASE/<exec file's name>/<id>/root as the jailer makes it.
func (f *firecrackerVMM) fcRoot(id backend.ID) string {
	if !f.jailed() {
		return f.m.sandboxDir(id)
	}
	return filepath.Join(f.jailBase(id), filepath.Base(f.m.settings.Firecracker), instanceID(id), "root")
}

// fcPath is how Firecracker names the file name of fcRoot: relative to its working
// directory, or absolute in its chroot.
func (f *firecrackerVMM) fcPath(name string) string {
	if f.jailed() {
		return "/" + name
	}
	return name
}

// intoJail hard-links a file into the chroot as name and returns Firecracker's path of
// it: a jailed Firecracker sees nothing else of the host.
func (f *firecrackerVMM) intoJail(id backend.ID, src, name string) (string, error) {
	dst := filepath.Join(f.fcRoot(id), name)
	os.Remove(dst)
	if err := os.Link(src, dst); err != nil {
		return "", fmt.Errorf("microvm: put %s in the jailer's chroot: %w (the image cache and the sandboxes must be on one file system)", src, err)
	}
	return f.fcPath(name), nil
}

// client is a client of the sandbox's Firecracker API.
func (f *firecrackerVMM) client(id backend.ID) *firecracker.Client {
	sock := filepath.Join(f.fcRoot(id), fcSocket)
	return firecracker.NewDialer(func(ctx context.Context) (net.Conn, error) { return dialUnix(ctx, sock) })
}

// launch starts the sandbox's firecracker process, detached, and waits for its API.
func (f *firecrackerVMM) launch(ctx context.Context, id backend.ID, md meta) (*firecracker.Client, error) {
	dir := f.m.sandboxDir(id)
	for _, s := range []string{fcPid, consoleLog} {
		os.Remove(filepath.Join(dir, s))
	}
	for _, s := range []string{fcSocket, vsockSocket} {
		os.Remove(filepath.Join(f.fcRoot(id), s))
	}
	console, err := f.startConsoleKeep(id, md)
	if err != nil {
		return nil, err
	}
	defer console.Close()
	cmd, err := f.command(id)
	if err != nil {
		return nil, err
	}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = console, console
	// Its own session: a VM outlives the daemon that started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("microvm: start Firecracker: %w", err)
	}
	console.Close()
	// Reaped here while the daemon runs; by init once it has gone.
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	if err := atomicfile.Write(filepath.Join(dir, fcPid), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		cmd.Process.Kill()
		return nil, err
	}
	c := f.client(id)
	deadline := time.Now().Add(10 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Describe(cctx)
		cancel()
		if err == nil {
			return c, nil
		}
		// Whether the process started here has ended, not pid's reading of its command
		// line: the jailer's exec into Firecracker passes through a moment where
		// /proc/PID/cmdline reads as empty.
		select {
		case <-exited:
			// What it wrote is in the file once the console's reader has read the pipe
			// to its end.
			f.m.consoleWritten(id)
			return nil, fmt.Errorf("microvm: Firecracker ended at its start: %s", lastConsoleLines(filepath.Join(dir, consoleLog), 3))
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			cmd.Process.Kill()
			return nil, fmt.Errorf("microvm: Firecracker's API did not answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// command is the sandbox's Firecracker process: firecracker itself, or the jailer,
// which makes the chroot BASE/firecracker/paddock-ID/root, copies firecracker into it,
// enters it (and new cgroups, as it does by default) and runs firecracker there as
// jailer_uid and jailer_gid, passing it the --id.
func (f *firecrackerVMM) command(id backend.ID) (*exec.Cmd, error) {
	s := f.m.settings
	if !f.jailed() {
		return exec.Command(s.Firecracker, "--api-sock", f.fcPath(fcSocket), "--id", instanceID(id)), nil
	}
	fc, err := exec.LookPath(s.Firecracker)
	if err != nil {
		return nil, err
	}
	if fc, err = filepath.Abs(fc); err != nil {
		return nil, err
	}
	root := f.fcRoot(id)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	// The chroot is Firecracker's to write in: its sockets and snapshots.
	if err := os.Chown(root, s.JailerUID, s.JailerGID); err != nil {
		return nil, fmt.Errorf("microvm: the jailer's chroot: %w (the jailer needs the daemon to run as root)", err)
	}
	return exec.Command(s.Jailer, "--id", instanceID(id), "--exec-file", fc,
		"--uid", strconv.Itoa(s.JailerUID), "--gid", strconv.Itoa(s.JailerGID), "--chroot-base-dir", f.jailBase(id),
		"--", "--api-sock", f.fcPath(fcSocket)), nil
}

// bootConfig is the VM as Firecracker is told it: the sandbox's size, the kernel and
// initramfs and command line of the QEMU path (with the vsock channel), the image
// read-only and the data disk, the vsock device; no network device.
func (f *firecrackerVMM) bootConfig(id backend.ID, md meta) (firecracker.Boot, error) {
	kernelELF, initrd, _, err := f.m.bootFiles(md)
	if err != nil {
		return firecracker.Boot{}, err
	}
	rootfs, data := md.Rootfs, filepath.Join(f.m.sandboxDir(id), dataDisk)
	if f.jailed() {
		// The image cache's files are readable by all; the data disk becomes the jailed
		// user's, who writes it.
		if err := os.MkdirAll(f.fcRoot(id), 0o700); err != nil {
			return firecracker.Boot{}, err
		}
		if err := os.Chown(data, f.m.settings.JailerUID, f.m.settings.JailerGID); err != nil {
			return firecracker.Boot{}, err
		}
		for _, p := range []struct {
			path *string
			name string
		}{{&kernelELF, "vmlinux"}, {&initrd, "initrd.cpio"}, {&rootfs, "rootfs.ext4"}, {&data, dataDisk}} {
			if *p.path, err = f.intoJail(id, *p.path, p.name); err != nil {
				return firecracker.Boot{}, err
			}
		}
	}
	cpus, mem := vmSize(md.Limits)
	return firecracker.Boot{
		Machine: firecracker.MachineConfig{VCPUCount: cpus, MemSizeMiB: mem},
		Source:  firecracker.BootSource{KernelImagePath: kernelELF, InitrdPath: initrd, BootArgs: firecrackerCmdline(f.m.settings.KernelArgs)},
		Drives: []firecracker.Drive{
			// Init finds the disks by their labels: neither is the kernel's root device.
			{DriveID: "root", PathOnHost: rootfs, IsReadOnly: true},
			{DriveID: "data", PathOnHost: data, CacheType: "Writeback"},
		},
		Vsock: firecracker.Vsock{GuestCID: guestCID, UDSPath: f.fcPath(vsockSocket)},
	}, nil
}

// firecrackerCmdline is the QEMU path's kernel command line (KVM's: Firecracker has
// nothing else) with the vsock channel, and what Firecracker's guide gives its guests:
// a reboot through the keyboard controller, which ends Firecracker (the later reboot=
// wins), and no PCI bus to probe.
func firecrackerCmdline(kernelArgs string) string {
	return kernelCmdline("kvm", append([]string{"reboot=k", "pci=off", vmspec.VsockArg}, strings.Fields(kernelArgs)...)...)
}

func (f *firecrackerVMM) boot(ctx context.Context, id backend.ID, md meta) error {
	if md.OpenNetwork {
		return fmt.Errorf("microvm: --network open is built for --vmm qemu only")
	}
	cfg, err := f.bootConfig(id, md)
	if err != nil {
		return err
	}
	c, err := f.launch(ctx, id, md)
	if err != nil {
		return err
	}
	if err := c.Boot(ctx, cfg); err != nil {
		f.halt(context.Background(), id)
		return fmt.Errorf("microvm: boot the VM: %w", err)
	}
	return nil
}

// pid is the sandbox's firecracker process, when it runs: the pid file's, checked to
// be the one started for this sandbox (a pid is reused).
func (f *firecrackerVMM) pid(id backend.ID) int {
	data, err := os.ReadFile(filepath.Join(f.m.sandboxDir(id), fcPid))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "\x00"+instanceID(id)+"\x00") {
		return 0
	}
	if _, err := backend.ProcStartTime(pid); err != nil { // ended: a zombie
		return 0
	}
	return pid
}

func (f *firecrackerVMM) status(ctx context.Context, id backend.ID) (bool, string, error) {
	if f.pid(id) == 0 {
		return false, "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := f.client(id).Describe(ctx)
	if err != nil {
		if f.pid(id) == 0 {
			return false, "", nil
		}
		return true, "not answering its API (" + err.Error() + ")", nil
	}
	if info.State == "Running" {
		return true, "", nil
	}
	return true, strings.ToLower(info.State), nil
}

// halt ends the firecracker process at once, the VM with it; Stop's power off through
// init has synced the disks before.
func (f *firecrackerVMM) halt(ctx context.Context, id backend.ID) error {
	pid := f.pid(id)
	if pid == 0 {
		return nil
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if !waitGone(ctx, f.pid, id, 10*time.Second) {
		return fmt.Errorf("microvm: Firecracker (pid %d) did not end", pid)
	}
	return nil
}

// dialVsock opens a connection to the guest's vsock port through Firecracker's host
// socket: "CONNECT PORT\n", answered "OK HOSTPORT\n" once the guest accepted it; a
// guest that does not listen (yet) has the connection closed.
func (f *firecrackerVMM) dialVsock(ctx context.Context, id backend.ID, port uint32) (net.Conn, error) {
	conn, err := dialUnix(ctx, filepath.Join(f.fcRoot(id), vsockSocket))
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := fmt.Fprintf(conn, "CONNECT %d\n", port); err != nil {
		conn.Close()
		return nil, err
	}
	// Byte by byte: what follows the line is the guest's.
	var line []byte
	b := make([]byte, 1)
	for len(line) < 32 {
		if _, err := conn.Read(b); err != nil {
			conn.Close()
			return nil, fmt.Errorf("vsock port %d: %w", port, err)
		}
		if b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	hostPort, ok := strings.CutPrefix(string(line), "OK ")
	if _, err := strconv.ParseUint(hostPort, 10, 32); !ok || err != nil {
		conn.Close()
		return nil, fmt.Errorf("vsock port %d: Firecracker answered %q", port, line)
	}
	if !stop() {
		conn.Close()
		return nil, ctx.Err()
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}

// dialVsockWait dials the port until the guest accepts, the process ends or ctx is done.
func (f *firecrackerVMM) dialVsockWait(ctx context.Context, id backend.ID, port uint32) (net.Conn, error) {
	for {
		conn, err := f.dialVsock(ctx, id, port)
		if err == nil {
			return conn, nil
		}
		if f.pid(id) == 0 {
			return nil, backend.ErrNotRunning
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the guest's vsock port %d: %w (last: %v)", port, ctx.Err(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (f *firecrackerVMM) connect(ctx context.Context, id backend.ID) (*yamux.Session, error) {
	dir := f.m.sandboxDir(id)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(f.m.settings.StartTimeout)*time.Second)
	defer cancel()
	conn, err := f.dialVsockWait(ctx, id, vmspec.GuestVsockPort)
	if err != nil {
		if errors.Is(err, backend.ErrNotRunning) {
			f.m.consoleWritten(id)
			return nil, fmt.Errorf("microvm: the VM ended before its guest answered: %s", lastConsoleLines(filepath.Join(dir, consoleLog), 8))
		}
		return nil, fmt.Errorf("microvm: %w (the VM's console says: %s)", err, lastConsoleLines(filepath.Join(dir, consoleLog), 8))
	}
	s, err := portmux.Client(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("microvm: %w (the VM's console says: %s)", err, lastConsoleLines(filepath.Join(dir, consoleLog), 8))
	}
	return s, nil
}

// control sends one request to the VM's init on a connection of its own to the control
// vsock port and returns the answer.
func (f *firecrackerVMM) control(ctx context.Context, id backend.ID, req string) ([]byte, error) {
	if f.pid(id) == 0 {
		return nil, backend.ErrNotRunning
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := f.dialVsockWait(ctx, id, vmspec.ControlVsockPort)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return askInit(ctx, conn, req)
}

// suspendable says the Firecracker driver can suspend VMs: pause and a full snapshot.
func (f *firecrackerVMM) suspendable() error { return nil }

// save pauses the VM and writes its full snapshot: its state to path, its memory
// beside it; on failure the VM runs on.
func (f *firecrackerVMM) save(ctx context.Context, id backend.ID, path string) error {
	os.Remove(path)
	os.Remove(memFile(path))
	c := f.client(id)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// A jailed Firecracker writes in its chroot; the files are then moved beside the
	// data disk, where the backend keeps them.
	statePath, memPath := path, memFile(path)
	if f.jailed() {
		statePath, memPath = f.fcPath(savedState), f.fcPath(memFile(savedState))
	}
	err := c.Suspend(ctx, statePath, memPath)
	if err == nil && f.jailed() {
		root := f.fcRoot(id)
		if err = os.Rename(filepath.Join(root, savedState), path); err == nil {
			err = os.Rename(filepath.Join(root, memFile(savedState)), memFile(path))
		}
	}
	if err != nil {
		c.Resume(context.Background())
		os.Remove(path)
		os.Remove(memFile(path))
		return err
	}
	return nil
}

// resume starts a fresh firecracker process and loads the snapshot into it, the VM
// resumed by the load. The memory file may go once it has: the VM maps it privately,
// and an unlinked file stays mapped.
func (f *firecrackerVMM) resume(ctx context.Context, id backend.ID, md meta, saved string) error {
	if !exists(memFile(saved)) {
		return fmt.Errorf("the VM's saved memory %s is missing", memFile(saved))
	}
	c, err := f.launch(ctx, id, md)
	if err != nil {
		return err
	}
	statePath, memPath := saved, memFile(saved)
	if f.jailed() {
		if statePath, err = f.intoJail(id, saved, savedState); err != nil {
			return err
		}
		if memPath, err = f.intoJail(id, memFile(saved), memFile(savedState)); err != nil {
			return err
		}
	}
	err = c.ResumeFrom(ctx, statePath, memPath)
	if f.jailed() {
		// Loaded (the memory mapped) or not, the chroot's links to the files go.
		os.Remove(filepath.Join(f.fcRoot(id), savedState))
		os.Remove(filepath.Join(f.fcRoot(id), memFile(savedState)))
	}
	return err
}
