package guestcmd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/seccomp"
)

// The sandbox's user in a microVM, as in every sandbox image.
const (
	agentUID = 1000
	agentGID = 1000
)

// dropAndRun runs argv as the sandbox's user with no capability, no_new_privs and the
// system call filter, as pid 1 of the sandbox's own pid namespace (init made it), with a
// /proc of that namespace: the sandbox sees its own processes, never the VM's init or
// the kernel's threads. It stays as the namespace's init, reaping orphans, and exits
// with the guest. Bounding set, no_new_privs and the filter belong to each thread: all
// are set on every thread of this process before it forks the guest.
func dropAndRun(argv []string) error {
	if os.Getuid() != 0 || os.Getpid() != 1 {
		return errors.New("vm-drop runs as root, as pid 1 of a new pid namespace (a microVM's init runs it)")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	arch, err := seccomp.ArchFor(runtime.GOARCH)
	if err != nil {
		return err
	}
	filter, err := seccomp.Compile(arch)
	if err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount the sandbox's /proc: %w", err)
	}
	if err := unix.Mount("/proc/sys", "/proc/sys", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind /proc/sys: %w", err)
	}
	if err := unix.Mount("", "/proc/sys", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("make /proc/sys read-only: %w", err)
	}
	last := 40
	if data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); e != 0 {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, e)
		}
	}
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); e != 0 {
		return fmt.Errorf("clear the ambient capabilities: %w", e)
	}
	if err := syscall.Setgroups([]int{agentGID}); err != nil {
		return err
	}
	if err := syscall.Setresgid(agentGID, agentGID, agentGID); err != nil {
		return err
	}
	// The kernel clears the permitted and effective sets at setuid; root's inheritable
	// set is empty.
	if err := syscall.Setresuid(agentUID, agentUID, agentUID); err != nil {
		return err
	}
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); e != 0 {
		return fmt.Errorf("no_new_privs: %w", e)
	}
	prog := unix.SockFprog{Len: uint16(len(filter) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&filter[0]))}
	if r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 || r != 0 {
		return fmt.Errorf("install the system call filter: %v (thread %d)", e, r)
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{os.NewFile(3, "guest-port")}
	if err := cmd.Start(); err != nil {
		return err
	}
	ws, err := reapUntil(cmd.Process.Pid)
	if err != nil {
		return err
	}
	return fmt.Errorf("the guest ended: %v", describeWait(ws))
}

// reapUntil waits for every child, orphans included, until pid ends, and says how it
// ended.
func reapUntil(pid int) (unix.WaitStatus, error) {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return ws, err
		}
		if got == pid {
			return ws, nil
		}
	}
}

func describeWait(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + unix.SignalName(ws.Signal())
	}
	return "exit status " + strconv.Itoa(ws.ExitStatus())
}
