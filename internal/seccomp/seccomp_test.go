package seccomp

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// more numbers the tests use, beyond the policy's: calls that must stay allowed.
var more = map[string][2]int{
	"read":              {0, 63},
	"openat":            {257, 56},
	"execve":            {59, 221},
	"getpid":            {39, 172},
	"setsid":            {112, 157},
	"ptrace":            {101, 117},
	"process_vm_readv":  {310, 270},
	"process_vm_writev": {311, 271},
	"io_setup":          {206, 0},
}

func number(t *testing.T, a Arch, name string) int {
	t.Helper()
	n, ok := syscalls[name]
	if !ok {
		n, ok = more[name]
	}
	if !ok {
		t.Fatalf("no number for %s", name)
	}
	return n[a.column]
}

// TestNumbers checks the table's column for the running arch against x/sys/unix.
func TestNumbers(t *testing.T) {
	a, err := ArchFor(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	for name := range unixNumbers {
		if got, want := number(t, a, name), unixNumbers[name]; got != want {
			t.Errorf("%s is %d in the table, %d in x/sys/unix", name, got, want)
		}
	}
	for name := range syscalls {
		if _, ok := unixNumbers[name]; !ok {
			t.Errorf("%s is not checked against x/sys/unix", name)
		}
	}
}

// call is one system call as the kernel hands it to the filter.
type call struct {
	arch uint32
	nr   uint32
	args [6]uint64
}

// data encodes struct seccomp_data as a little-endian kernel lays it out, read by a VM
// whose loads are big-endian: each 32-bit word is stored big-endian at its offset, so the
// VM loads the same values the kernel's filter would.
func (c call) data() []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[offNr:], c.nr)
	binary.BigEndian.PutUint32(b[offArch:], c.arch)
	for i, v := range c.args {
		binary.BigEndian.PutUint32(b[offArgs+8*i:], uint32(v))
		binary.BigEndian.PutUint32(b[offArgs+8*i+4:], uint32(v>>32))
	}
	return b
}

// vm runs the bytes Compile gives, disassembled again, as bwrap would hand them to the
// kernel.
func vm(t *testing.T, a Arch) func(call) uint32 {
	t.Helper()
	compiled, err := Compile(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(compiled)%8 != 0 {
		t.Fatalf("%d bytes is not a whole number of sock_filter", len(compiled))
	}
	var prog []bpf.Instruction
	for i := 0; i < len(compiled); i += 8 {
		raw := bpf.RawInstruction{Op: binary.LittleEndian.Uint16(compiled[i:]), Jt: compiled[i+2], Jf: compiled[i+3],
			K: binary.LittleEndian.Uint32(compiled[i+4:])}
		prog = append(prog, raw.Disassemble())
	}
	m, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	return func(c call) uint32 {
		n, err := m.Run(c.data())
		if err != nil {
			t.Fatal(err)
		}
		return uint32(n)
	}
}

const (
	allow  = unix.SECCOMP_RET_ALLOW
	eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	kill   = unix.SECCOMP_RET_KILL_PROCESS
)

// Personality flags (linux/personality.h), which x/sys/unix does not define.
const (
	addrNoRandomize = 0x0040000
	readImpliesExec = 0x0400000
	mmapPageZero    = 0x0100000
)

func verdict(v uint32) string {
	switch v {
	case allow:
		return "allow"
	case eperm:
		return "EPERM"
	case enosys:
		return "ENOSYS"
	case kill:
		return "kill"
	}
	return fmt.Sprintf("%#x", v)
}

func TestFilter(t *testing.T) {
	const (
		sigchld = uint64(unix.SIGCHLD)
		thread  = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD |
			unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID
	)
	for _, a := range []Arch{AMD64, ARM64} {
		t.Run(a.Name, func(t *testing.T) {
			run := vm(t, a)
			check := func(what string, c call, want uint32) {
				t.Helper()
				if c.arch == 0 {
					c.arch = a.audit
				}
				if got := run(c); got != want {
					t.Errorf("%s: %s, want %s", what, verdict(got), verdict(want))
				}
			}
			nr := func(name string) uint32 { return uint32(number(t, a, name)) }

			for _, name := range Refused(a) {
				want := uint32(eperm)
				switch name {
				case "clone", "unshare", "personality", "ioctl":
					continue // below, with their arguments
				case "clone3":
					want = enosys
				}
				check(name, call{nr: nr(name)}, want)
			}
			for _, name := range []string{"read", "openat", "execve", "getpid", "setsid", "ptrace", "process_vm_readv", "process_vm_writev", "io_setup"} {
				check(name, call{nr: nr(name), args: [6]uint64{1, 2, 3}}, allow)
			}

			clone := nr("clone")
			check("fork as clone(SIGCHLD)", call{nr: clone, args: [6]uint64{sigchld}}, allow)
			check("vfork as clone(CLONE_VM|CLONE_VFORK|SIGCHLD)", call{nr: clone, args: [6]uint64{unix.CLONE_VM | unix.CLONE_VFORK | sigchld}}, allow)
			check("a thread", call{nr: clone, args: [6]uint64{thread}}, allow)
			check("clone(CLONE_NEWUSER)", call{nr: clone, args: [6]uint64{unix.CLONE_NEWUSER | sigchld}}, eperm)
			for _, ns := range []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWPID, unix.CLONE_NEWNET} {
				check(fmt.Sprintf("clone(%#x)", ns), call{nr: clone, args: [6]uint64{ns | sigchld}}, eperm)
			}
			check("clone(CLONE_NEWUSER) with high bits", call{nr: clone, args: [6]uint64{1<<40 | unix.CLONE_NEWUSER}}, eperm)

			unshare := nr("unshare")
			check("unshare(CLONE_FILES|CLONE_FS)", call{nr: unshare, args: [6]uint64{unix.CLONE_FILES | unix.CLONE_FS}}, allow)
			check("unshare(CLONE_NEWUSER)", call{nr: unshare, args: [6]uint64{unix.CLONE_NEWUSER}}, eperm)
			check("unshare(CLONE_NEWNS)", call{nr: unshare, args: [6]uint64{unix.CLONE_NEWNS}}, eperm)
			check("unshare(CLONE_NEWTIME)", call{nr: unshare, args: [6]uint64{unix.CLONE_NEWTIME}}, eperm)

			ioctl := nr("ioctl")
			check("ioctl(TIOCSTI)", call{nr: ioctl, args: [6]uint64{0, unix.TIOCSTI}}, eperm)
			check("ioctl(TIOCLINUX)", call{nr: ioctl, args: [6]uint64{0, unix.TIOCLINUX}}, eperm)
			check("ioctl(TIOCSTI) with high bits the kernel ignores", call{nr: ioctl, args: [6]uint64{0, 0xffffffff_00000000 | unix.TIOCSTI}}, eperm)
			for _, req := range []uint64{unix.TIOCGWINSZ, unix.TIOCSWINSZ, unix.TIOCSCTTY, unix.TCGETS, unix.TIOCINQ} {
				check(fmt.Sprintf("ioctl(%#x)", req), call{nr: ioctl, args: [6]uint64{0, req}}, allow)
			}
			check("ioctl with TIOCSTI as its third argument", call{nr: ioctl, args: [6]uint64{0, unix.TCGETS, unix.TIOCSTI}}, allow)

			personality := nr("personality")
			for _, p := range []uint64{0, 0x8, 0x20000, 0x20008, 0xffffffff} {
				check(fmt.Sprintf("personality(%#x)", p), call{nr: personality, args: [6]uint64{p}}, allow)
			}
			for _, p := range []uint64{addrNoRandomize, readImpliesExec, mmapPageZero, 0x8 | addrNoRandomize} {
				check(fmt.Sprintf("personality(%#x)", p), call{nr: personality, args: [6]uint64{p}}, eperm)
			}

			for _, other := range []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, AMD64.audit ^ ARM64.audit ^ a.audit} {
				check(fmt.Sprintf("getpid from arch %#x", other), call{arch: other, nr: nr("getpid")}, kill)
			}
			if a.x32 {
				check("x32 read", call{nr: x32Bit | nr("read")}, enosys)
				check("x32 keyctl", call{nr: x32Bit | nr("keyctl")}, enosys)
			}
		})
	}
}

// TestKernel installs the filter in a child process and checks the running kernel
// agrees with the VM on a few calls: the bytes are what the kernel takes.
func TestKernel(t *testing.T) {
	if os.Getenv("SECCOMP_TEST_CHILD") == "1" {
		kernelChild()
		return
	}
	if _, err := ArchFor(runtime.GOARCH); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKernel$")
	cmd.Env = append(os.Environ(), "SECCOMP_TEST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := []string{
		"keyctl EPERM", "unshare(CLONE_NEWUSER) EPERM", "ioctl(TIOCSTI, high bits) EPERM", "clone3 ENOSYS",
		"personality(ADDR_NO_RANDOMIZE) EPERM", "getpid ok", "personality(query) ok", "exec true ok",
	}
	for _, w := range want {
		if !strings.Contains(string(out), w+"\n") {
			t.Errorf("the kernel did not say %q:\n%s", w, out)
		}
	}
}

func kernelChild() {
	a, _ := ArchFor(runtime.GOARCH)
	compiled, err := Compile(a)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	filter := make([]unix.SockFilter, len(compiled)/8)
	for i := range filter {
		b := compiled[8*i:]
		filter[i] = unix.SockFilter{Code: binary.LittleEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.LittleEndian.Uint32(b[4:])}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Println("no_new_privs:", err)
		os.Exit(1)
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		fmt.Println("seccomp:", e)
		os.Exit(1)
	}
	say := func(what string, e unix.Errno) {
		switch e {
		case 0:
			fmt.Println(what, "ok")
		case unix.EPERM:
			fmt.Println(what, "EPERM")
		case unix.ENOSYS:
			fmt.Println(what, "ENOSYS")
		default:
			fmt.Println(what, "errno", int(e))
		}
	}
	_, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, 0, 0)
	say("keyctl", e)
	_, _, e = unix.Syscall(unix.SYS_UNSHARE, unix.CLONE_NEWUSER, 0, 0)
	say("unshare(CLONE_NEWUSER)", e)
	_, _, e = unix.Syscall(unix.SYS_IOCTL, 0, 0xffffffff_00000000|unix.TIOCSTI, 0)
	say("ioctl(TIOCSTI, high bits)", e)
	_, _, e = unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
	say("clone3", e)
	_, _, e = unix.Syscall(unix.SYS_PERSONALITY, addrNoRandomize, 0, 0)
	say("personality(ADDR_NO_RANDOMIZE)", e)
	_, _, e = unix.Syscall(unix.SYS_GETPID, 0, 0, 0)
	say("getpid", e)
	_, _, e = unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	say("personality(query)", e)
	if err := exec.Command("true").Run(); err != nil {
		fmt.Println("exec true:", err)
	} else {
		fmt.Println("exec true ok")
	}
	os.Exit(0)
}
