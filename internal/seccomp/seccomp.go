// Package seccomp compiles the system call filter every bwrap sandbox runs under: a
// classic BPF program, the array of struct sock_filter that bwrap reads from the
// descriptor given to --seccomp and installs just before it runs the sandbox's first
// process, so that every process in the sandbox, the guest included, runs under it.
//
// The filter is a deny list in the spirit of Docker's default profile: it refuses, with
// EPERM, the kernel interfaces a sandbox's tools do without and whose bugs have been the
// usual way out of a container (io_uring, keyrings, eBPF, perf events, userfaultfd,
// mounts, namespaces, modules, kexec, the clock, file handles), and the two terminal
// ioctls that push input or console commands (TIOCSTI, TIOCLINUX). Everything else is
// allowed, so whatever the guest runs works as it does on the host. A call from another
// ABI (32-bit x86 through int 0x80 on amd64) kills the process, as libseccomp does by
// default: the numbers checked are those of the native ABI only. x32 calls, which share
// amd64's audit arch, get ENOSYS, what a kernel built without x32 says.
//
// It is compiled here, in Go, with golang.org/x/net/bpf: no libseccomp, no cgo.
// github.com/elastic/go-seccomp-bpf was considered and does not fit a deny list: a call
// from a foreign arch falls through to the default action (here, allow), it compiles for
// the running GOARCH only, and its argument checks compare all 64 bits, where the kernel
// reads only the low 32 of ioctl's request, so a request with high bits set would pass
// its TIOCSTI check (CVE-2019-10063 in Flatpak was that bug).
package seccomp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Arch is a kernel ABI the filter is compiled for. Both are little-endian, which the
// argument offsets rely on.
type Arch struct {
	// Name is the GOARCH.
	Name string
	// audit is the AUDIT_ARCH_* value the kernel puts in seccomp_data.arch.
	audit uint32
	// column is the arch's column in the syscalls table.
	column int
	// x32 says the x32 ABI shares the audit arch: its calls are told apart by a bit of
	// the call number.
	x32 bool
}

// The architectures the filter is written for.
var (
	AMD64 = Arch{Name: "amd64", audit: unix.AUDIT_ARCH_X86_64, column: 0, x32: true}
	ARM64 = Arch{Name: "arm64", audit: unix.AUDIT_ARCH_AARCH64, column: 1}
)

// ArchFor returns the Arch of a GOARCH.
func ArchFor(goarch string) (Arch, error) {
	switch goarch {
	case AMD64.Name:
		return AMD64, nil
	case ARM64.Name:
		return ARM64, nil
	}
	return Arch{}, fmt.Errorf("no seccomp filter for %s (only amd64 and arm64)", goarch)
}

// x32Bit marks a call of the x32 ABI on amd64 (__X32_SYSCALL_BIT).
const x32Bit = 0x40000000

// The offsets of struct seccomp_data's fields; an argument's low 32 bits come first on a
// little-endian machine.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// Namespace flags of clone, clone3 and unshare. CLONE_NEWTIME shares its bit with
// clone's exit signal, so only unshare is checked for it.
const (
	cloneNamespaces   = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	unshareNamespaces = cloneNamespaces | unix.CLONE_NEWTIME
)

// A rule refuses one system call: always, or when its argument says so. Conditions
// look at the argument's low 32 bits only, which is all the kernel reads of ioctl's
// request, personality's persona and clone's flags (unshare refuses high bits with
// EINVAL), so setting high bits can never slip a call past its rule.
type rule struct {
	name  string
	errno unix.Errno // EPERM unless set
	when  *argCheck  // nil: always
}

// argCheck refuses a call when its argument arg (counted from 0) shares a bit with
// anyBit, equals one of equal, or equals none of unless: exactly one of them is given.
type argCheck struct {
	arg    uint32
	anyBit uint32
	equal  []uint32
	unless []uint32
}

// policy is what the filter refuses. Every name is in the syscalls table; a call the
// arch does not have is left out for it.
var policy = []rule{
	// Large kernel surfaces behind most recent local privilege escalations.
	{name: "io_uring_setup"}, {name: "io_uring_enter"}, {name: "io_uring_register"},
	{name: "keyctl"}, {name: "add_key"}, {name: "request_key"},
	{name: "bpf"}, {name: "perf_event_open"}, {name: "userfaultfd"},
	// Mounts: the sandbox's file system is bwrap's to make, not its processes'.
	{name: "mount"}, {name: "umount2"}, {name: "pivot_root"}, {name: "move_mount"}, {name: "open_tree"},
	{name: "open_tree_attr"}, {name: "fsopen"}, {name: "fsconfig"}, {name: "fsmount"}, {name: "fspick"},
	{name: "mount_setattr"},
	// Namespaces: a new user namespace hands back every capability, inside it. clone3
	// passes its flags in memory a filter cannot read: ENOSYS makes libc fall back to
	// clone, whose flags it can.
	{name: "unshare", when: &argCheck{arg: 0, anyBit: unshareNamespaces}},
	{name: "clone", when: &argCheck{arg: 0, anyBit: cloneNamespaces}},
	{name: "clone3", errno: unix.ENOSYS},
	{name: "setns"},
	// The host's kernel, clock and devices.
	{name: "init_module"}, {name: "finit_module"}, {name: "delete_module"},
	{name: "kexec_load"}, {name: "kexec_file_load"}, {name: "reboot"},
	{name: "acct"}, {name: "swapon"}, {name: "swapoff"}, {name: "syslog"},
	{name: "quotactl"}, {name: "quotactl_fd"}, {name: "nfsservctl"}, {name: "lookup_dcookie"},
	{name: "settimeofday"}, {name: "clock_settime"}, {name: "adjtimex"}, {name: "clock_adjtime"},
	{name: "uselib"}, {name: "ioperm"}, {name: "iopl"}, {name: "vhangup"}, {name: "_sysctl"},
	// File handles open any file of a mount by number, past the directories around it.
	{name: "open_by_handle_at"}, {name: "name_to_handle_at"},
	// Personalities other than these (Docker's list: Linux, PER_LINUX32, UNAME26, both,
	// and the query) turn off address space randomisation or map page zero.
	{name: "personality", when: &argCheck{arg: 0, unless: []uint32{0, 0x8, 0x20000, 0x20008, 0xffffffff}}},
	// Terminal ioctls that type into a terminal (TIOCSTI) or drive the console (TIOCLINUX).
	{name: "ioctl", when: &argCheck{arg: 1, equal: []uint32{unix.TIOCSTI, unix.TIOCLINUX}}},
}

// Refused lists the names of the calls the filter refuses on an arch (conditionally or
// not), for tests and documentation.
func Refused(a Arch) []string {
	var names []string
	for _, r := range policy {
		if syscalls[r.name][a.column] >= 0 {
			names = append(names, r.name)
		}
	}
	return names
}

// RefusedOutright lists the names of the calls the filter refuses with EPERM whatever
// their arguments, on any arch it is written for: what a filter of another form (the
// docker backend's seccomp profile) can refuse by name alone.
func RefusedOutright() []string {
	var names []string
	for _, r := range policy {
		if r.when == nil && r.errno == 0 {
			names = append(names, r.name)
		}
	}
	return names
}

func ret(v uint32) bpf.Instruction { return bpf.RetConstant{Val: v} }

func retErrno(e unix.Errno) bpf.Instruction {
	return ret(unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA)
}

// Program assembles the filter for an arch.
func Program(a Arch) ([]bpf.Instruction, error) {
	allow := ret(unix.SECCOMP_RET_ALLOW)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.audit, SkipTrue: 1},
		ret(unix.SECCOMP_RET_KILL_PROCESS),
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if a.x32 {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: x32Bit, SkipFalse: 1}, retErrno(unix.ENOSYS))
	}
	for _, r := range policy {
		nums, ok := syscalls[r.name]
		if !ok {
			return nil, fmt.Errorf("seccomp: no number for %s", r.name)
		}
		nr := nums[a.column]
		if nr < 0 {
			continue
		}
		errno := r.errno
		if errno == 0 {
			errno = unix.EPERM
		}
		body, err := r.body(retErrno(errno), allow)
		if err != nil {
			return nil, err
		}
		// The accumulator holds the call number whenever a rule starts: a rule whose
		// call it is returns, and only those rules load an argument.
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: uint8(len(body))})
		prog = append(prog, body...)
	}
	return append(prog, allow), nil
}

// body is a rule's instructions once its call matched: they return refuse or allow.
func (r rule) body(refuse, allow bpf.Instruction) ([]bpf.Instruction, error) {
	c := r.when
	if c == nil {
		return []bpf.Instruction{refuse}, nil
	}
	if c.arg > 5 {
		return nil, fmt.Errorf("seccomp: %s: no argument %d", r.name, c.arg)
	}
	body := []bpf.Instruction{bpf.LoadAbsolute{Off: offArgs + 8*c.arg, Size: 4}}
	switch {
	case c.anyBit != 0:
		return append(body, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: c.anyBit, SkipFalse: 1}, refuse, allow), nil
	case len(c.equal) > 0 || len(c.unless) > 0:
		// A comparison per value, each jumping on a match past the rest to the second
		// of the two returns: refuse for equal, allow for unless.
		values, miss, hit := c.equal, allow, refuse
		if len(c.unless) > 0 {
			values, miss, hit = c.unless, refuse, allow
		}
		for i, v := range values {
			body = append(body, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(values) - i)})
		}
		return append(body, miss, hit), nil
	}
	return nil, fmt.Errorf("seccomp: %s: an argument check with no condition", r.name)
}

// Compile assembles the filter for an arch into the bytes bwrap's --seccomp reads: an
// array of struct sock_filter in the arch's (little-endian) byte order.
func Compile(a Arch) ([]byte, error) {
	prog, err := Program(a)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble: %w", err)
	}
	if len(raw) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("seccomp: %d instructions, more than the kernel's %d", len(raw), unix.BPF_MAXINSNS)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, in := range raw {
		out = binary.LittleEndian.AppendUint16(out, in.Op)
		out = append(out, in.Jt, in.Jf)
		out = binary.LittleEndian.AppendUint32(out, in.K)
	}
	return out, nil
}
