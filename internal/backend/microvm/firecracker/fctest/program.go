package fctest

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/paddockhq/paddock/internal/vmspec"
)

// GuestEnv names the guest binary the fake's "VM" runs (a test sets it to
// testenv.SmallGuest()'s path).
const GuestEnv = "PADDOCK_FCTEST_GUEST"

// CallsFile is where Main appends every API call, a JSON object a line, beside its
// API socket: the socket's path and this suffix.
const CallsFile = ".calls.jsonl"

// snapshotMagic marks a state file the fake wrote.
const snapshotMagic = "paddock-fctest-snapshot"

// Main runs the fake as the firecracker program: `firecracker --api-sock PATH --id ID`
// serves the API on PATH (relative to its working directory, as Firecracker's is) and
// checks every call as Start's fake does, and the files it is given as Firecracker opens
// them. Its "VM" is the guest binary run as a host process:
//
//   - InstanceStart binds the vsock device's unix socket (uds_path) and, when the boot
//     arguments hold vmspec.VsockArg (as the VM's init would read them), starts the
//     guest serving vmspec.GuestVsockPort; the fake itself answers
//     vmspec.ControlVsockPort as the VM's init does (sync, limits, which it has none
//     of, and poweroff, which ends the VM and this process, as a guest's reboot ends
//     Firecracker).
//   - A connection to the vsock socket must say "CONNECT PORT\n" first, answered
//     "OK HOSTPORT\n" (host ports counting from 2^30) once the guest's port accepts it,
//     then carries the stream; a malformed request, or a port nothing listens on, has
//     the connection closed, as Firecracker does.
//   - The VM's serial console is this process's standard output, as Firecracker's is
//     when PUT /serial names no file: the guest process writes to it directly (its
//     standard output and error are this process's), with blocking writes, so a pipe
//     nothing reads holds the "VM" up as it holds up a real vCPU writing the serial
//     port. The fake's own errors go there too, as Firecracker's log does.
//   - Pause and resume stop and continue the guest process (SIGSTOP, SIGCONT).
//   - A snapshot writes the VM's configuration as its state file and a memory file; a
//     load checks both are the fake's and starts the guest afresh: a host process's
//     memory cannot be saved, so what ran in the guest does not survive, unlike
//     in a real VM.
//
// It runs no kernel: it tests what the driver asks of Firecracker and the vsock
// handshake, not a VM.
func Main(args []string) int {
	fs := flag.NewFlagSet("firecracker", flag.ContinueOnError)
	apiSock := fs.String("api-sock", "", "the API's unix socket")
	id := fs.String("id", "anonymous-instance", "the instance's id")
	// What the jailer passes on.
	fs.Uint64("start-time-us", 0, "the jailer's start time")
	fs.Uint64("start-time-cpu-us", 0, "the jailer's start CPU time")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *apiSock == "" {
		fmt.Fprintln(os.Stderr, "fctest firecracker: --api-sock is required")
		return 2
	}
	s := NewServer(*apiSock)
	s.Root = os.Getenv(chrootEnv)
	ln, err := net.Listen("unix", s.Resolve(*apiSock))
	if err != nil {
		fmt.Fprintf(os.Stderr, "fctest firecracker: %v\n", err)
		return 1
	}
	calls, err := os.OpenFile(s.Resolve(*apiSock)+CallsFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fctest firecracker: %v\n", err)
		return 1
	}
	vm := &hostVM{guest: os.Getenv(GuestEnv), exit: make(chan int, 1), resolve: s.Resolve}
	s.CheckFiles, s.Machine, s.ID = true, vm, *id
	s.OnCall = func(c Call) {
		data, _ := json.Marshal(c)
		calls.Write(append(data, '\n'))
	}
	go http.Serve(ln, s)
	fmt.Printf("fctest firecracker: serving the API on %s (id %s)\n", *apiSock, *id)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	code := 0
	select {
	case <-sig:
	case code = <-vm.exit:
	}
	vm.stop()
	os.Remove(s.Resolve(*apiSock))
	return code
}

// hostVM is the fake's "VM": the guest binary as a host process behind the vsock
// socket.
type hostVM struct {
	guest   string
	exit    chan int
	resolve func(string) string

	mu       sync.Mutex
	cfg      Config
	proc     *os.Process
	guestDir string
	vsock    net.Listener
	hostPort uint32
}

func (v *hostVM) Start(cfg Config) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cfg = cfg
	return v.startLocked()
}

// startLocked binds the vsock socket and starts the guest when the boot arguments ask
// for the vsock channel.
func (v *hostVM) startLocked() error {
	if v.cfg.UDSPath == "" {
		return nil
	}
	ln, err := net.Listen("unix", v.resolve(v.cfg.UDSPath))
	if err != nil {
		return fmt.Errorf("vsock: %w", err)
	}
	v.vsock = ln
	if slices.Contains(strings.Fields(v.cfg.BootArgs), vmspec.VsockArg) {
		if err := v.startGuest(); err != nil {
			ln.Close()
			return err
		}
	}
	go v.acceptVsock(ln)
	return nil
}

// startGuest runs the guest binary serving a unix listener as its vsock port: the
// listener is given to it as the VM's init gives it its AF_VSOCK one.
func (v *hostVM) startGuest() error {
	if v.guest == "" {
		return errors.New(GuestEnv + " names no guest binary")
	}
	// In the working directory (the sandbox's), by a relative path: a socket's address
	// holds 108 bytes.
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	const rel = "fctest-vm"
	dir := filepath.Join(cwd, rel)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	os.Remove(filepath.Join(rel, "guest.sock"))
	ln, err := net.Listen("unix", filepath.Join(rel, "guest.sock"))
	if err != nil {
		return err
	}
	lf, err := ln.(*net.UnixListener).File()
	if err != nil {
		return err
	}
	defer lf.Close()
	cmd := exec.Command(v.guest, "guest", "serve", "--mux-listen-fd", "3", "--sandbox", "fctest")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.ExtraFiles = []*os.File{lf}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// The VM ends with its monitor, killed or not.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	v.proc, v.guestDir = cmd.Process, rel
	return nil
}

// acceptVsock serves the vsock device's host socket.
func (v *hostVM) acceptVsock(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go v.vsockConn(c)
	}
}

// vsockConn reads a connection's CONNECT request, as Firecracker's muxer does, and
// forwards it to the guest's port.
func (v *hostVM) vsockConn(c net.Conn) {
	port, ok := readConnect(c)
	if !ok {
		c.Close()
		return
	}
	v.mu.Lock()
	dir, proc := v.guestDir, v.proc
	v.hostPort++
	hostPort := (uint32(1) << 30) + v.hostPort
	v.mu.Unlock()
	switch {
	case port == vmspec.ControlVsockPort && proc != nil:
		fmt.Fprintf(c, "OK %d\n", hostPort)
		v.control(c)
	case port == vmspec.GuestVsockPort && proc != nil:
		g, err := net.Dial("unix", filepath.Join(dir, "guest.sock"))
		if err != nil {
			c.Close()
			return
		}
		fmt.Fprintf(c, "OK %d\n", hostPort)
		go func() { io.Copy(g, c); g.(*net.UnixConn).CloseWrite() }()
		io.Copy(c, g)
		c.Close()
		g.Close()
	default:
		// Nothing listens on that port in the guest: its reset closes the connection.
		c.Close()
	}
}

// readConnect reads "CONNECT PORT\n", byte by byte as nothing after it is the fake's;
// anything else is refused.
func readConnect(c net.Conn) (uint32, bool) {
	var line []byte
	b := make([]byte, 1)
	for {
		if _, err := c.Read(b); err != nil || len(line) > 32 {
			return 0, false
		}
		if b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	p, ok := strings.CutPrefix(string(line), "CONNECT ")
	if !ok || p == "" || strings.TrimSpace(p) != p {
		return 0, false
	}
	port, err := strconv.ParseUint(p, 10, 32)
	return uint32(port), err == nil
}

// control answers the control port as the VM's init does.
func (v *hostVM) control(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		tag, req, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch req {
		case vmspec.Sync:
			fmt.Fprintf(c, "%s {}\n", tag)
		case vmspec.ReadLimits:
			data, _ := json.Marshal(vmspec.Limits{Error: "the fake's VM is a host process: it has no cgroup of its own"})
			fmt.Fprintf(c, "%s %s\n", tag, data)
		case vmspec.Poweroff:
			fmt.Fprintf(c, "%s {}\n", tag)
			// The guest reboots; Firecracker ends.
			select {
			case v.exit <- 0:
			default:
			}
			return
		}
	}
}

func (v *hostVM) signal(sig syscall.Signal) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.proc == nil {
		return nil
	}
	return syscall.Kill(-v.proc.Pid, sig)
}

func (v *hostVM) Pause() error  { return v.signal(syscall.SIGSTOP) }
func (v *hostVM) Resume() error { return v.signal(syscall.SIGCONT) }

// snapshot is the fake's state file.
type snapshot struct {
	Magic  string `json:"magic"`
	Config Config `json:"config"`
}

func (v *hostVM) Snapshot(cfg Config, statePath, memPath string) error {
	data, _ := json.Marshal(snapshot{Magic: snapshotMagic, Config: cfg})
	if err := os.WriteFile(statePath, data, 0o600); err != nil {
		return err
	}
	return os.WriteFile(memPath, []byte(snapshotMagic+" memory\n"), 0o600)
}

func (v *hostVM) Load(statePath, memPath string, resume bool) (Config, error) {
	data, err := os.ReadFile(statePath)
	if err != nil {
		return Config{}, err
	}
	var snap snapshot
	if json.Unmarshal(data, &snap) != nil || snap.Magic != snapshotMagic {
		return Config{}, fmt.Errorf("%s is not a snapshot state file", statePath)
	}
	mem, err := os.ReadFile(memPath)
	if err != nil {
		return Config{}, err
	}
	if string(mem) != snapshotMagic+" memory\n" {
		return Config{}, fmt.Errorf("%s is not the snapshot's memory", memPath)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cfg = snap.Config
	if err := v.startLocked(); err != nil {
		return Config{}, err
	}
	if !resume && v.proc != nil {
		syscall.Kill(-v.proc.Pid, syscall.SIGSTOP)
	}
	return snap.Config, nil
}

// stop ends the guest and removes its directory (a killed fake leaves it, in the
// sandbox's directory, to the next start or the sandbox's removal).
func (v *hostVM) stop() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.proc != nil {
		syscall.Kill(-v.proc.Pid, syscall.SIGKILL)
		v.proc = nil
	}
	if v.vsock != nil {
		v.vsock.Close()
	}
	if v.guestDir != "" {
		os.RemoveAll(v.guestDir)
		v.guestDir = ""
	}
}

// chrootEnv is the chroot the fake jailer gives the fake firecracker.
const chrootEnv = "PADDOCK_FCTEST_CHROOT"

// JailerMain runs the fake as Firecracker's jailer: `jailer --id ID --exec-file FC
// --uid UID --gid GID --chroot-base-dir BASE -- ARGS` checks its arguments as the
// jailer does (each required, the id of letters, digits and hyphens up to 64, the exec
// file a file whose name holds "firecracker", numbers for the ids, an absolute base),
// makes the chroot BASE/<exec file's name>/ID/root, and runs FC in its place (the same
// process) with ARGS, --id and the start times, as the jailer does. It cannot enter
// the chroot, new cgroups, or drop to UID and GID without running the guest from the
// host; instead it runs the fake firecracker in the chroot's directory and tells it
// (PADDOCK_FCTEST_CHROOT) to take every path it is given as inside the chroot, so a
// path the driver gives that is not in the chroot fails as it would under a jail.
func JailerMain(args []string) int {
	fs := flag.NewFlagSet("jailer", flag.ContinueOnError)
	id := fs.String("id", "", "")
	execFile := fs.String("exec-file", "", "")
	uid := fs.String("uid", "", "")
	gid := fs.String("gid", "", "")
	base := fs.String("chroot-base-dir", "/srv/jailer", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(msg string) int {
		fmt.Fprintln(os.Stderr, "fctest jailer: "+msg)
		return 1
	}
	validID := len(*id) > 0 && len(*id) <= 64
	for _, r := range *id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			validID = false
		}
	}
	if !validID {
		return fail(fmt.Sprintf("invalid --id %q", *id))
	}
	if fi, err := os.Stat(*execFile); err != nil || !fi.Mode().IsRegular() || !strings.Contains(filepath.Base(*execFile), "firecracker") {
		return fail(fmt.Sprintf("invalid --exec-file %q: a file whose name holds firecracker", *execFile))
	}
	for _, n := range []string{*uid, *gid} {
		if _, err := strconv.ParseUint(n, 10, 32); err != nil {
			return fail(fmt.Sprintf("--uid and --gid are numbers, not %q", n))
		}
	}
	if !filepath.IsAbs(*base) {
		return fail("--chroot-base-dir must be absolute")
	}
	root := filepath.Join(*base, filepath.Base(*execFile), *id, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fail(err.Error())
	}
	if err := os.Chdir(root); err != nil {
		return fail(err.Error())
	}
	argv := append([]string{*execFile}, fs.Args()...)
	argv = append(argv, "--id", *id, "--start-time-us", "0", "--start-time-cpu-us", "0")
	env := append(os.Environ(), chrootEnv+"="+root)
	return fail(syscall.Exec(*execFile, argv, env).Error())
}
