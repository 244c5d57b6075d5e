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

// dropAndExec runs argv as the sandbox's user with no capability, no_new_privs and the
// system call filter. Bounding set, no_new_privs and the filter belong to a thread: all
// are set on the one that calls execve.
func dropAndExec(argv []string) error {
	if os.Getuid() != 0 {
		return errors.New("vm-drop runs as root (a microVM's init runs it)")
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
	runtime.LockOSThread()
	last := 40
	if data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	if err := syscall.Setgroups([]int{agentGID}); err != nil {
		return err
	}
	if err := syscall.Setresgid(agentGID, agentGID, agentGID); err != nil {
		return err
	}
	if err := syscall.Setresuid(agentUID, agentUID, agentUID); err != nil {
		return err
	}
	// Root's inheritable set is empty; the kernel cleared the others at setuid.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear the capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(filter) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&filter[0]))}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("install the system call filter: %w", err)
	}
	return syscall.Exec(path, argv, os.Environ())
}
