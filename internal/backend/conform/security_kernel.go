package conform

import (
	"context"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel checks: what a process inside tries in order to reach more of the kernel
// than its tools need, and to get hold of the guest that serves it. The probes are
// perl (perl-base is essential in Debian, so in every image and on every host), whose
// syscall() makes a raw system call where python3-minimal has no ctypes. The call
// numbers come from golang.org/x/sys/unix for the arch the suite runs on, which is the
// sandbox's, independently of any filter's own table.

// kernelSurfaceProbe makes each call once, harmlessly, and prints "FAIL NAME ..." for a
// call that succeeded: each is refused without a capability on none of these kernels
// but, for an unprivileged user of an ordinary host, io_uring_setup, keyctl,
// perf_event_open, unshare, clone and userfaultfd (in user mode) all succeed.
const kernelSurfaceProbe = `
use strict;
sub nr { return 0 + $ENV{"NR_" . uc(shift)} }
sub check {
    my ($name, $r) = @_;
    if ($r == -1) { print "refused $name: errno ", ($! + 0), "\n" }
    else { print "FAIL $name succeeded, returning $r\n" }
}
my $params = "\0" x 120;
check("io_uring_setup", syscall(nr("io_uring_setup"), 1, $params));
# KEYCTL_GET_KEYRING_ID of KEY_SPEC_SESSION_KEYRING, creating it.
check("keyctl", syscall(nr("keyctl"), 0, -3, 1));
# BPF_MAP_CREATE of a one-entry array.
my $attr = pack("LLLL", 2, 4, 4, 1) . ("\0" x 56);
check("bpf", syscall(nr("bpf"), 0, $attr, 72));
# A software clock counting this process in user mode only.
my $perf = pack("LLQQQQQ", 1, 64, 0, 0, 0, 0, 1 | 32 | 64) . ("\0" x 8);
check("perf_event_open", syscall(nr("perf_event_open"), $perf, 0, -1, -1, 0));
check("unshare(CLONE_NEWUSER)", syscall(nr("unshare"), 0x10000000));
# clone(CLONE_NEWUSER|SIGCHLD) with no new stack, like fork: a child exits at once.
my $pid = syscall(nr("clone"), 0x10000000 | 17, 0, 0, 0, 0);
if ($pid == 0) { syscall(nr("exit_group"), 0) }
waitpid($pid, 0) if $pid > 0;
check("clone(CLONE_NEWUSER)", $pid);
my $dir = "/tmp/mount-probe-$$";
mkdir $dir;
my ($src, $type) = ("none", "tmpfs");
my $r = syscall(nr("mount"), $src, $dir, $type, 0, 0);
check("mount", $r);
syscall(nr("umount2"), $dir, 2) if $r != -1;
rmdir $dir;
# UFFD_USER_MODE_ONLY: what an unprivileged user may ask for.
check("userfaultfd", syscall(nr("userfaultfd"), 1));
print "done\n";
`

// testKernelSurface checks that calls into the kernel's riskiest surfaces fail inside:
// io_uring, keyrings, eBPF, perf events, a new user namespace (by unshare and by clone),
// mount and userfaultfd. The harness's Allows lists those the backend lets through, and why.
func testKernelSurface(t T, sb *sandbox) {
	numbers := map[string]int{
		"io_uring_setup": unix.SYS_IO_URING_SETUP, "keyctl": unix.SYS_KEYCTL, "bpf": unix.SYS_BPF,
		"perf_event_open": unix.SYS_PERF_EVENT_OPEN, "unshare": unix.SYS_UNSHARE, "clone": unix.SYS_CLONE,
		"exit_group": unix.SYS_EXIT_GROUP, "mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2,
		"userfaultfd": unix.SYS_USERFAULTFD,
	}
	var env []string
	for name, nr := range numbers {
		env = append(env, "NR_"+strings.ToUpper(name)+"="+strconv.Itoa(nr))
	}
	fails := sb.probeArgv(t, []string{"perl", "-e", kernelSurfaceProbe}, env...)
	noFailures(t, "kernel calls a sandbox must not make", sb.notAllowed(t, fails))
}

// notAllowed drops, and logs, the findings of a probe that the backend allows: those whose
// first word is a key of Harness.Allows.
func (sb *sandbox) notAllowed(t T, fails []string) []string {
	t.Helper()
	var out []string
	for _, f := range fails {
		key, _, _ := strings.Cut(f, " ")
		if why, ok := sb.h.Allows[strings.TrimSuffix(key, ":")]; ok {
			t.Logf("%s (allowed on this backend: %s)", f, why)
			continue
		}
		out = append(out, f)
	}
	return out
}

// agentProbe finds the guest's processes (guest serve, and guest connect where the
// backend bridges through it) and tries to trace them and read their memory and
// environment, as a process of the sandbox, running as the guest's own user, would; and
// tries to trace and to stop the sandbox's process 1.
const agentProbe = `
use strict;
my $ptrace = 0 + $ENV{NR_PTRACE};
my @agents;
opendir(my $d, "/proc") or die "no /proc: $!";
for my $p (sort { $a <=> $b } grep { /^\d+$/ } readdir($d)) {
    next if $p == $$;
    open(my $f, "<", "/proc/$p/cmdline") or next;
    local $/;
    my $c = <$f>;
    # paddock's own argv: the sandbox's init (the guest's ns-init, bwrap's), whose command
    # line ends with the guest's, is not it.
    push @agents, $p if defined $c && $c =~ /^[^\0]*paddock\0(?:guest|agent)\0(?:serve|connect)\0/;
}
print "agent processes: @agents; this probe's parent: ", getppid(), "\n";
print "FAIL no process of the agent found\n" unless @agents;
for my $p (@agents) {
    # PTRACE_SEIZE does not stop the tracee: nothing to undo if it succeeds.
    if (syscall($ptrace, 0x4206, 0 + $p, 0, 0) != -1) {
        print "FAIL ptrace-seize of agent pid $p succeeded\n";
        syscall($ptrace, 17, 0 + $p, 0, 0);
    }
    # PTRACE_ATTACH stops it: wait for the stop and detach, so the sandbox goes on.
    if (syscall($ptrace, 16, 0 + $p, 0, 0) != -1) {
        print "FAIL ptrace-attach of agent pid $p succeeded\n";
        waitpid($p, 0x40000000);
        syscall($ptrace, 17, 0 + $p, 0, 0);
    }
    for my $file ("environ", "mem") {
        if (open(my $h, "<", "/proc/$p/$file")) {
            print "FAIL agent-$file: opened /proc/$p/$file\n";
        }
    }
}
# Process 1 reaps the sandbox's orphans: traced, or stopped, it leaves their zombies
# (and a traced one could be made to do anything its user may).
if (syscall($ptrace, 0x4206, 1, 0, 0) != -1) {
    print "FAIL pid1-ptrace: ptrace-seize of pid 1 succeeded\n";
    syscall($ptrace, 17, 1, 0, 0);
}
kill 'STOP', 1;
select(undef, undef, undef, 0.3);
if (open(my $s, "<", "/proc/1/stat")) {
    local $/;
    my $st = <$s>;
    if ($st =~ /\) [Tt] /) {
        print "FAIL pid1-stop: SIGSTOP stopped pid 1\n";
        kill 'CONT', 1;
    }
}
print "done\n";
`

// testAgentUntraceable checks that no process inside can trace the guest, which
// would let it stop the guest (wedging the sandbox) or speak on the daemon's connection,
// nor read its memory or environment, nor trace or stop process 1 (whose orphans'
// zombies would then pile up); and that the guest answers afterwards.
func testAgentUntraceable(t T, sb *sandbox) {
	fails := sb.probeArgv(t, []string{"perl", "-e", agentProbe}, "NR_PTRACE="+strconv.Itoa(unix.SYS_PTRACE))
	noFailures(t, "the guest is within reach of the sandbox's processes", sb.notAllowed(t, fails))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := sb.client.Info(ctx); err != nil {
		t.Fatalf("the agent does not answer after the probe: %v", err)
	}
	if got := sb.mustRun(t, "echo still-here"); got != "still-here" {
		t.Fatalf("exec after the probe: %q", got)
	}
	// An orphan's zombie is process 1's to reap.
	orphans := sb.mustRun(t, `(sleep 0.1 &); sleep 1.5
for s in /proc/[0-9]*/stat; do read -r l < "$s" 2>/dev/null && case "$l" in *"(sleep) Z"*) echo "zombie $l";; esac; done; echo checked`)
	if orphans != "checked" {
		t.Fatalf("an orphan's zombie is left unreaped by process 1: %s", orphans)
	}
}
