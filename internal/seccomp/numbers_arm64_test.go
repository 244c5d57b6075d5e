package seccomp

import "golang.org/x/sys/unix"

// unixNumbers are x/sys/unix's numbers for this GOARCH, to check the table against.
var unixNumbers = map[string]int{
	"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER,
	"io_uring_register": unix.SYS_IO_URING_REGISTER, "keyctl": unix.SYS_KEYCTL, "add_key": unix.SYS_ADD_KEY,
	"request_key": unix.SYS_REQUEST_KEY, "bpf": unix.SYS_BPF, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
	"userfaultfd": unix.SYS_USERFAULTFD, "mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2,
	"pivot_root": unix.SYS_PIVOT_ROOT, "move_mount": unix.SYS_MOVE_MOUNT, "open_tree": unix.SYS_OPEN_TREE,
	"open_tree_attr": unix.SYS_OPEN_TREE_ATTR, "fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG,
	"fsmount": unix.SYS_FSMOUNT, "fspick": unix.SYS_FSPICK, "mount_setattr": unix.SYS_MOUNT_SETATTR,
	"unshare": unix.SYS_UNSHARE, "clone": unix.SYS_CLONE, "clone3": unix.SYS_CLONE3, "setns": unix.SYS_SETNS,
	"init_module": unix.SYS_INIT_MODULE, "finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE,
	"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD, "reboot": unix.SYS_REBOOT,
	"acct": unix.SYS_ACCT, "swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF, "syslog": unix.SYS_SYSLOG,
	"quotactl": unix.SYS_QUOTACTL, "quotactl_fd": unix.SYS_QUOTACTL_FD, "nfsservctl": unix.SYS_NFSSERVCTL,
	"lookup_dcookie": unix.SYS_LOOKUP_DCOOKIE, "settimeofday": unix.SYS_SETTIMEOFDAY,
	"clock_settime": unix.SYS_CLOCK_SETTIME, "adjtimex": unix.SYS_ADJTIMEX, "clock_adjtime": unix.SYS_CLOCK_ADJTIME,
	"uselib": -1, "ioperm": -1, "iopl": -1, "vhangup": unix.SYS_VHANGUP,
	"_sysctl": -1, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
	"name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT, "personality": unix.SYS_PERSONALITY, "ioctl": unix.SYS_IOCTL,

	"read": unix.SYS_READ, "openat": unix.SYS_OPENAT, "execve": unix.SYS_EXECVE, "getpid": unix.SYS_GETPID,
	"setsid": unix.SYS_SETSID, "ptrace": unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV,
	"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV, "io_setup": unix.SYS_IO_SETUP,
}
