package guestcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/vmspec"
)

// newVMInit is `guest vm-init`: the init of a microVM. The kernel runs the guest binary
// as /init of the initramfs paddock builds, with these arguments; it loads the modules
// the disks and ports need, mounts the root file system (the image's, read-only, under
// a writable layer on the sandbox's disk), /workspace and the home, switches root, and
// runs the guest as the sandbox's user under the sandbox's limits, for as long as the
// VM runs.
func newVMInit() command {
	return command{name: "vm-init", short: "The init of a microVM (run by its kernel)", hidden: true,
		setup: func(*flag.FlagSet) runFunc {
			return noArgs(func(context.Context) error {
				if os.Getpid() != 1 {
					return errors.New("vm-init is the init of a microVM: the kernel runs it as pid 1")
				}
				err := vmInit()
				// Init must not return: the kernel would panic with the reason lost.
				fmt.Fprintf(os.Stderr, "paddock vm-init: %v\n", err)
				poweroff()
				return err
			})
		}}
}

// vmInit runs the VM's boot, then serves its control port and keeps the guest running.
func vmInit() error {
	if err := mountAll([]mountSpec{{"devtmpfs", "/dev", "devtmpfs", 0, ""}, {"proc", "/proc", "proc", 0, ""},
		{"sysfs", "/sys", "sysfs", 0, ""}}); err != nil {
		return err
	}
	// The initramfs has no /dev/console for the kernel to open: init's output (and the
	// guest's log) reaches the VM's console, which the host keeps, once it does.
	if console, err := os.OpenFile("/dev/console", os.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			unix.Dup2(int(console.Fd()), fd)
		}
		console.Close()
	}
	say("loading modules")
	if err := loadModules(vmspec.ModuleList); err != nil {
		return err
	}
	cmdline, _ := os.ReadFile("/proc/cmdline")
	vsock := slices.Contains(strings.Fields(string(cmdline)), vmspec.VsockArg)
	if vsock {
		// Firecracker's: no power-off device, it ends when the guest reboots.
		haltByReboot = true
		say("loading the vsock device's modules")
		if err := loadModules(vmspec.VsockModuleList); err != nil {
			return err
		}
	}
	say("waiting for the disks")
	disks, err := findDisks(30 * time.Second)
	if err != nil {
		return err
	}
	say("mounting the root")
	cfg, err := mountRoot(disks)
	if err != nil {
		return err
	}
	if cfg.Network != nil {
		say("loading the network device's modules")
		if err := loadModules(vmspec.NetModuleList); err != nil {
			return err
		}
	}
	if err := switchRoot("/newroot"); err != nil {
		return err
	}
	if err := setupSystem(cfg); err != nil {
		return err
	}
	say("starting the guest")
	return runGuest(cfg, vsock)
}

// say writes a step of the boot on the VM's console.
func say(step string) { fmt.Fprintln(os.Stderr, "paddock vm-init: "+step) }

type mountSpec struct {
	source, target, fstype string
	flags                  uintptr
	data                   string
}

func mountAll(ms []mountSpec) error {
	for _, m := range ms {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.source, m.target, m.fstype, m.flags, m.data); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.target, err)
		}
	}
	return nil
}

// loadModules loads the initramfs's modules in the order of a list, each with the
// parameters the kernel command line gives it (modname.param=value), as modprobe would.
func loadModules(listPath string) error {
	list, err := os.ReadFile(listPath)
	if err != nil {
		return err
	}
	cmdline, _ := os.ReadFile("/proc/cmdline")
	for _, path := range strings.Fields(string(list)) {
		name := strings.ReplaceAll(strings.TrimSuffix(filepath.Base(path), ".ko"), "-", "_")
		var params []string
		for _, w := range strings.Fields(string(cmdline)) {
			if p, ok := strings.CutPrefix(w, name+"."); ok {
				params = append(params, p)
			}
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = unix.FinitModule(int(f.Fd()), strings.Join(params, " "), 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("load module %s: %w", name, err)
		}
	}
	return nil
}

// findDisks waits for the root and data disks and returns their devices by label.
func findDisks(wait time.Duration) (map[string]string, error) {
	deadline := time.Now().Add(wait)
	for {
		found := map[string]string{}
		entries, _ := os.ReadDir("/sys/block")
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "vd") {
				continue
			}
			dev := "/dev/" + e.Name()
			if label, err := ext4Label(dev); err == nil {
				found[label] = dev
			}
		}
		if found[vmspec.RootLabel] != "" && found[vmspec.DataLabel] != "" {
			return found, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the VM's disks did not appear (found %v)", found)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ext4Label reads the volume name of an ext4 file system's superblock.
func ext4Label(dev string) (string, error) {
	f, err := os.Open(dev)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sb := make([]byte, 1024)
	if _, err := f.ReadAt(sb, 1024); err != nil {
		return "", err
	}
	if sb[0x38] != 0x53 || sb[0x39] != 0xef {
		return "", errors.New("not ext4")
	}
	return strings.TrimRight(string(sb[0x78:0x88]), "\x00"), nil
}

// mountRoot makes the sandbox's root at /newroot: the image read-only, a writable layer
// on the data disk over it, and the data disk's workspace and home; the guest binary is
// this one, read-only. It returns the sandbox's configuration, read from the data disk.
func mountRoot(disks map[string]string) (vmspec.Config, error) {
	var cfg vmspec.Config
	if err := mountAll([]mountSpec{{disks[vmspec.RootLabel], "/lower", "ext4", unix.MS_RDONLY, ""},
		{disks[vmspec.DataLabel], "/data", "ext4", unix.MS_NOSUID | unix.MS_NODEV, ""}}); err != nil {
		return cfg, err
	}
	data, err := os.ReadFile(filepath.Join("/data", vmspec.ConfigPath))
	if err != nil {
		return cfg, fmt.Errorf("the sandbox's configuration: %w", err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("the sandbox's configuration: %w", err)
	}
	for _, d := range []string{vmspec.UpperDir, vmspec.WorkDir, vmspec.WorkspaceDir, vmspec.HomeDir} {
		if err := os.MkdirAll(filepath.Join("/data", d), 0o755); err != nil {
			return cfg, err
		}
	}
	// The workspace and home are the agent's, on a disk made on the host by whoever
	// runs the daemon.
	for _, d := range []string{vmspec.WorkspaceDir, vmspec.HomeDir} {
		if err := os.Chown(filepath.Join("/data", d), 1000, 1000); err != nil {
			return cfg, err
		}
	}
	overlay := "lowerdir=/lower,upperdir=/data/" + vmspec.UpperDir + ",workdir=/data/" + vmspec.WorkDir
	if err := mountAll([]mountSpec{{"overlay", "/newroot", "overlay", 0, overlay}}); err != nil {
		return cfg, err
	}
	binds := []struct{ from, to string }{
		{"/data/" + vmspec.WorkspaceDir, "/newroot" + inside.Workspace},
		{"/data/" + vmspec.HomeDir, "/newroot" + inside.Home},
		{"/init", "/newroot" + inside.GuestBinary},
	}
	for _, b := range binds {
		if b.from == "/init" {
			if err := os.MkdirAll(filepath.Dir(b.to), 0o755); err != nil {
				return cfg, err
			}
			if f, err := os.OpenFile(b.to, os.O_CREATE|os.O_RDONLY, 0o755); err == nil {
				f.Close()
			}
		} else if err := os.MkdirAll(b.to, 0o755); err != nil {
			return cfg, err
		}
		if err := unix.Mount(b.from, b.to, "", unix.MS_BIND, ""); err != nil {
			return cfg, fmt.Errorf("bind %s on %s: %w", b.from, b.to, err)
		}
	}
	if err := unix.Mount("", "/newroot"+inside.GuestBinary, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		return cfg, fmt.Errorf("make the guest binary read-only: %w", err)
	}
	return cfg, nil
}

// switchRoot makes dir the root, as switch_root does: /dev moves with it; the
// initramfs's files stay in memory, for the guest binary bound from it.
func switchRoot(dir string) error {
	if err := os.MkdirAll(dir+"/dev", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("/dev", dir+"/dev", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("move /dev: %w", err)
	}
	unix.Unmount("/proc", unix.MNT_DETACH)
	unix.Unmount("/sys", unix.MNT_DETACH)
	if err := unix.Chdir(dir); err != nil {
		return err
	}
	if err := unix.Mount(dir, "/", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("move the root: %w", err)
	}
	if err := unix.Chroot("."); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	return unix.Chdir("/")
}

// setupSystem mounts what the sandbox sees of the kernel, read-only where it could be
// written (/sys; vm-drop mounts the sandbox's /proc, its /proc/sys read-only); makes
// the sandbox's cgroup with its limits, /tmp and /run, and brings loopback up.
func setupSystem(cfg vmspec.Config) error {
	tmp := fmt.Sprintf("mode=1777,size=%d", max(cfg.TmpBytes, 16<<20))
	if err := mountAll([]mountSpec{
		{"proc", "/proc", "proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
		{"sysfs", "/sys", "sysfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_RDONLY, ""},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
		{"devpts", "/dev/pts", "devpts", unix.MS_NOSUID | unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5"},
		{"tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, tmp},
		{"tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, tmp},
		{"tmpfs", "/run", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=0755,size=64m"},
	}); err != nil {
		return err
	}
	os.Remove("/dev/ptmx")
	if err := os.Symlink("pts/ptmx", "/dev/ptmx"); err != nil {
		return err
	}
	if err := os.MkdirAll(inside.Run, 0o755); err != nil {
		return err
	}
	if err := os.Chown(inside.Run, 1000, 1000); err != nil {
		return err
	}
	if cfg.Name != "" {
		unix.Sethostname([]byte(cfg.Name))
	}
	if err := loopbackUp(); err != nil {
		return err
	}
	if cfg.Network != nil {
		if err := networkUp(*cfg.Network, 10*time.Second, "/etc/resolv.conf"); err != nil {
			return err
		}
	}
	return makeCgroup(cfg)
}

// sandboxCgroup holds the guest and everything it runs.
const sandboxCgroup = "/sys/fs/cgroup/sandbox"

func makeCgroup(cfg vmspec.Config) error {
	if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+cpu +memory +pids"), 0); err != nil {
		return fmt.Errorf("enable the cgroup controllers: %w", err)
	}
	if err := os.MkdirAll(sandboxCgroup, 0o755); err != nil {
		return err
	}
	period := 100000
	write := map[string]string{
		"memory.max":      strconv.FormatInt(cfg.MemoryBytes, 10),
		"memory.swap.max": "0",
		"pids.max":        strconv.FormatInt(cfg.Pids, 10),
		"cpu.max":         fmt.Sprintf("%d %d", int(cfg.CPUs*float64(period)), period),
	}
	for file, v := range write {
		if err := os.WriteFile(filepath.Join(sandboxCgroup, file), []byte(v), 0); err != nil && !(file == "memory.swap.max" && errors.Is(err, os.ErrNotExist)) {
			return fmt.Errorf("limit the sandbox (%s %s): %w", file, v, err)
		}
	}
	return nil
}

// readLimits reads the limits in force back from the sandbox's cgroup.
func readLimits() vmspec.Limits {
	var l vmspec.Limits
	read := func(file string) string {
		data, err := os.ReadFile(filepath.Join(sandboxCgroup, file))
		if err != nil && l.Error == "" {
			l.Error = err.Error()
		}
		return strings.TrimSpace(string(data))
	}
	l.MemoryBytes, _ = strconv.ParseInt(read("memory.max"), 10, 64)
	l.Pids, _ = strconv.ParseInt(read("pids.max"), 10, 64)
	if f := strings.Fields(read("cpu.max")); len(f) == 2 {
		quota, _ := strconv.ParseFloat(f[0], 64)
		period, _ := strconv.ParseFloat(f[1], 64)
		if period > 0 {
			l.CPUs = quota / period
		}
	}
	return l
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring loopback up: %w", err)
	}
	return nil
}

// openPort opens the virtio-console port named name.
func openPort(name string, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	for {
		entries, _ := os.ReadDir("/sys/class/virtio-ports")
		for _, e := range entries {
			n, err := os.ReadFile(filepath.Join("/sys/class/virtio-ports", e.Name(), "name"))
			if err == nil && strings.TrimSpace(string(n)) == name {
				return os.OpenFile("/dev/"+e.Name(), os.O_RDWR, 0)
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the VM has no port %s", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// vsockListen listens on an AF_VSOCK port of the VM, from any host.
func vsockListen(port uint32) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("vsock socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrVM{CID: unix.VMADDR_CID_ANY, Port: port}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind vsock port %d: %w", port, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen on vsock port %d: %w", port, err)
	}
	return os.NewFile(uintptr(fd), fmt.Sprintf("vsock-%d", port)), nil
}

// controlRequest is one line of a control connection, and where its answer goes.
type controlRequest struct {
	line  string
	reply io.Writer
}

// acceptControl serves the control vsock port: each connection's lines are requests,
// each answered on that connection.
func acceptControl(ln *os.File, requests chan<- controlRequest) {
	for {
		fd, _, err := unix.Accept4(int(ln.Fd()), unix.SOCK_CLOEXEC)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		conn := os.NewFile(uintptr(fd), "control-conn")
		go func() {
			defer conn.Close()
			br := bufio.NewReader(conn)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				requests <- controlRequest{strings.TrimSpace(line), conn}
			}
		}()
	}
}

// runGuest starts the guest on its port (or vsock listener), starts it again whenever
// it ends, reaps every orphan, and serves the control port, until the host asks for the
// power off.
func runGuest(cfg vmspec.Config, vsock bool) error {
	var port *os.File
	var err error
	portFlag := "--port-fd"
	requests := make(chan controlRequest)
	if vsock {
		if port, err = vsockListen(vmspec.GuestVsockPort); err != nil {
			return err
		}
		portFlag = "--mux-listen-fd"
		control, err := vsockListen(vmspec.ControlVsockPort)
		if err != nil {
			return err
		}
		go acceptControl(control, requests)
	} else {
		if port, err = openPort(vmspec.GuestPort, 30*time.Second); err != nil {
			return err
		}
		control, err := openPort(vmspec.ControlPort, 30*time.Second)
		if err != nil {
			return err
		}
		go readControl(control, requests)
	}
	cg, err := os.Open(sandboxCgroup)
	if err != nil {
		return err
	}
	start := func() (*os.Process, error) {
		cmd := exec.Command(inside.GuestBinary, inside.GuestCommand, "vm-drop", "--", inside.GuestBinary, inside.GuestCommand,
			"serve", portFlag, "3", "--sandbox", cfg.Name)
		cmd.Env = cfg.Env
		cmd.Dir = inside.Workspace
		cmd.ExtraFiles = []*os.File{port}
		cmd.Stderr = os.Stderr
		// The sandbox's own pid and mount namespaces: vm-drop is their init.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, UseCgroupFD: true, CgroupFD: int(cg.Fd()),
			Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return cmd.Process, nil
	}
	guest, err := start()
	if err != nil {
		return fmt.Errorf("start the guest: %w", err)
	}
	exited := make(chan int, 64)
	go reap(exited)
	for {
		select {
		case pid := <-exited:
			if guest != nil && pid == guest.Pid {
				fmt.Fprintln(os.Stderr, "paddock vm-init: the guest ended; starting it again")
				time.Sleep(200 * time.Millisecond)
				if guest, err = start(); err != nil {
					fmt.Fprintf(os.Stderr, "paddock vm-init: start the guest: %v\n", err)
				}
			}
		case r := <-requests:
			id, req, _ := strings.Cut(r.line, " ")
			switch req {
			case vmspec.ReadLimits:
				data, _ := json.Marshal(readLimits())
				fmt.Fprintf(r.reply, "%s %s\n", id, data)
			case vmspec.Sync:
				unix.Sync()
				fmt.Fprintf(r.reply, "%s {}\n", id)
			case vmspec.Processes:
				data, _ := json.Marshal(processes())
				fmt.Fprintf(r.reply, "%s %s\n", id, data)
			case vmspec.Poweroff:
				fmt.Fprintf(r.reply, "%s {}\n", id)
				return errors.New("powering off as the host asked")
			}
		}
	}
}

// processes describes the VM's processes but init and the kernel's threads, one "PID
// NAME [STATE WCHAN]" each and, for a process of several threads, how many of them wait
// where.
func processes() string {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && pid != 1 && len(cmdline) > 0 {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	var out []string
	for _, pid := range pids {
		e := strconv.Itoa(pid)
		tasks, _ := os.ReadDir(filepath.Join("/proc", e, "task"))
		waits := map[string]int{}
		var keys []string
		for _, t := range tasks {
			w := taskWait(filepath.Join("/proc", e, "task", t.Name()))
			if waits[w]++; waits[w] == 1 {
				keys = append(keys, w)
			}
		}
		var where []string
		for _, k := range keys {
			if waits[k] > 1 {
				k = fmt.Sprintf("%s x%d", k, waits[k])
			}
			where = append(where, k)
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e, "comm"))
		out = append(out, fmt.Sprintf("%d %s [%s]", pid, strings.TrimSpace(string(comm)), strings.Join(where, ", ")))
	}
	return strings.Join(out, "; ")
}

// taskWait is a thread's state and the kernel function it waits in: "S port_fops_read".
func taskWait(dir string) string {
	stat, _ := os.ReadFile(filepath.Join(dir, "stat"))
	state := "?"
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 {
		if f := strings.Fields(string(stat[i+1:])); len(f) > 0 {
			state = f[0]
		}
	}
	wchan, _ := os.ReadFile(filepath.Join(dir, "wchan"))
	if w := strings.TrimSpace(string(wchan)); w != "" && w != "0" {
		return state + " " + w
	}
	return state
}

// reap waits for every child, the guest's orphans included, and reports each pid.
func reap(exited chan<- int) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		select {
		case exited <- pid:
		default:
		}
	}
}

// readControl passes on the control port's requests, one a line; a host that goes
// (the port reads as ended) is waited for.
func readControl(port io.ReadWriter, requests chan<- controlRequest) {
	br := bufio.NewReader(port)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		requests <- controlRequest{strings.TrimSpace(line), port}
	}
}

// haltByReboot makes poweroff reboot: a monitor without a power-off device
// (Firecracker) ends when its guest reboots.
var haltByReboot bool

// poweroff ends every process, syncs and unmounts the disks, and powers the VM off.
func poweroff() {
	unix.Kill(-1, unix.SIGTERM)
	time.Sleep(300 * time.Millisecond)
	unix.Kill(-1, unix.SIGKILL)
	unix.Sync()
	for _, m := range []string{inside.Workspace, inside.Home, "/"} {
		unix.Mount("", m, "", unix.MS_REMOUNT|unix.MS_RDONLY, "")
	}
	unix.Sync()
	if haltByReboot {
		unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
	}
	unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
}

// newVMDrop is `guest vm-drop -- ARGV`: run by a microVM's init as root in new pid and
// mount namespaces, it runs argv as the sandbox's user with no capability, not even in
// its bounding set, no way to gain privileges (no_new_privs: sudo and setuid programs
// cannot), and the system call filter of bwrap sandboxes.
func newVMDrop() command {
	return command{name: "vm-drop", usage: "-- ARGV", hidden: true,
		short: "Run a command as the sandbox's user with no privilege (a microVM's init runs it)",
		setup: func(*flag.FlagSet) runFunc {
			return func(_ context.Context, args []string) error {
				if len(args) == 0 {
					return errors.New("vm-drop needs the command to run after --")
				}
				return dropAndRun(args)
			}
		}}
}
