package conform

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient"
)

// The security checks: what a process inside a sandbox, acting as an attacker, must not be
// able to do to the host. Each check drives the real sandbox and looks from both sides where
// the host can see an attempt (a listener, a planted secret, a sentinel file), so that it
// fails when the protection it covers is taken away. The network checks are in
// security_net.go.

// probe runs a python3 program in the sandbox and returns the lines it printed that start
// with "FAIL " (what it managed to do that it must not). The program must print "done" as
// its last line, so that one that crashed half-way never passes for one that found nothing.
func (sb *sandbox) probe(t T, program string, env ...string) []string {
	t.Helper()
	return sb.probeArgv(t, []string{"python3", "-c", program}, env...)
}

// probeArgv is probe for a program in any language: argv runs it.
func (sb *sandbox) probeArgv(t T, argv []string, env ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut strings.Builder
	code, err := sb.client.Exec(ctx, guestclient.ExecOptions{Argv: argv, Env: env, Stdout: &out, Stderr: &errOut})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err != nil || code != 0 || lines[len(lines)-1] != "done" {
		t.Fatalf("the probe did not run to its end (exit %d, %v; %s is needed in the sandbox):\n%s%s", code, err, argv[0], out.String(), errOut.String())
	}
	var fails []string
	for _, l := range lines {
		if strings.HasPrefix(l, "FAIL ") {
			fails = append(fails, strings.TrimPrefix(l, "FAIL "))
		}
	}
	return fails
}

// noFailures fails the test with every finding of a probe.
func noFailures(t T, what string, fails []string) {
	t.Helper()
	if len(fails) > 0 {
		t.Errorf("%s:\n  %s", what, strings.Join(fails, "\n  "))
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// testHostSecrets plants a secret on the host where a careless backend would let it
// through (the daemon's home, the host's /etc that bwrap shows read-only, and the places
// the harness names) and checks nothing inside can read it, nor /etc/shadow, nor /root.
func testHostSecrets(t T, sb *sandbox) {
	secret := "paddock-conformance-secret-" + randomHex(8)
	places := append([]string(nil), sb.h.HostSecrets...)
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		places = append(places, filepath.Join(home, ".paddock-conformance-secret"))
	}
	if os.Geteuid() == 0 {
		places = append(places, "/etc/paddock-conformance-secret")
	}
	var planted []string
	for _, p := range places {
		p = fmt.Sprintf("%s-%s", p, randomHex(4))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			t.Fatalf("plant a secret at %s: %v", p, err)
		}
		t.Cleanup(func() { os.Remove(p) })
		_, err = f.WriteString(secret + "\n")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		planted = append(planted, p)
	}
	fails := sb.probe(t, `
import os
secret = os.environ["SECRET"]
for p in os.environ["PLANTED"].split(":"):
    try:
        data = open(p).read()
        print("FAIL read the host's secret at", p, "=", repr(data[:60]))
    except OSError:
        pass
# Host files only root may read.
for p in ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh/ssh_host_rsa_key",
          "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key"]:
    try:
        open(p).read(1)
        print("FAIL read", p)
    except OSError:
        pass
try:
    entries = os.listdir("/root")
    if entries:
        print("FAIL /root lists", sorted(entries)[:10])
except OSError:
    pass
# The secret anywhere the sandbox can see, but /usr and the kernel's trees.
for top in ["/etc", "/root", "/home", "/tmp", "/run", "/var", "/opt", "/mnt", "/srv", "/media", "/workspace"]:
    for dirpath, dirnames, filenames in os.walk(top):
        for name in filenames:
            p = os.path.join(dirpath, name)
            try:
                with open(p, "rb") as f:
                    if secret.encode() in f.read(1 << 20):
                        print("FAIL the host's secret is readable at", p)
            except OSError:
                pass
print("done")
`, "SECRET="+secret, "PLANTED="+strings.Join(planted, ":"))
	noFailures(t, "host secrets reached the sandbox", fails)
}

// testWriteRace writes, makes directories, extracts and removes through the Files API
// beneath a directory that a process inside flips, as fast as it can, between a real
// directory and a symlink to a directory outside the workspace. Nothing may land in or
// vanish from that outside directory, however the race falls.
func testWriteRace(t T, sb *sandbox) {
	ctx, c := ctxT(t), sb.client
	outside := "/tmp/race-outside-" + randomHex(4)
	sb.mustRun(t, "rm -rf /workspace/race && mkdir -p /workspace/race "+outside+" && echo sentinel > "+outside+"/victim")
	flipCtx, stopFlip := context.WithCancel(ctx)
	defer stopFlip()
	flipOut := &syncBuffer{}
	flipDone := make(chan error, 1)
	go func() {
		_, err := sb.client.Exec(flipCtx, guestclient.ExecOptions{Argv: []string{"python3", "-c", `
import os, sys, time
os.chdir("/workspace/race")
target = sys.argv[1]
flips = 0
os.mkdir("d")
print("flipping", flush=True)
def attempt(f, *args):
    try:
        f(*args)
        return True
    except OSError:
        return False
while not os.path.exists("stop"):
    attempt(os.rename, "d", "real")          # the directory goes aside,
    attempt(os.symlink, target, "d")         # a link takes its place,
    time.sleep(0.0005)
    attempt(os.unlink, "d")                  # and the directory comes back.
    if not attempt(os.rename, "real", "d"):
        for dirpath, dirnames, filenames in os.walk("real", topdown=False):
            for name in filenames + dirnames:
                attempt(os.remove if name in filenames else os.rmdir, os.path.join(dirpath, name))
        attempt(os.rmdir, "real")
        if not os.path.lexists("d"):
            attempt(os.mkdir, "d")
    time.sleep(0.0005)
    flips += 1
print("flips", flips, flush=True)
`, outside}, Stdout: flipOut, Stderr: flipOut})
		flipDone <- err
	}()
	waitFor(t, flipOut, "flipping")

	var ok, refused int
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	tw.WriteHeader(&tar.Header{Name: "sub/", Mode: 0o755, Typeflag: tar.TypeDir})
	tw.WriteHeader(&tar.Header{Name: "sub/victim", Mode: 0o644, Size: 4, Typeflag: tar.TypeReg})
	tw.Write([]byte("tar\n"))
	tw.WriteHeader(&tar.Header{Name: "victim", Mode: 0o644, Size: 4, Typeflag: tar.TypeReg})
	tw.Write([]byte("tar\n"))
	tw.Close()
	// 150 rounds, or what a minute holds: an emulated VM on a loaded machine did not get
	// through them within the context's two minutes, and each round races as truly.
	roundsFrom := time.Now()
	for i := range 150 {
		if time.Since(roundsFrom) > time.Minute {
			t.Logf("stopped after %d rounds of calls, a minute's worth", i)
			break
		}
		ops := []func() error{
			func() error {
				_, err := c.WriteFile(ctx, ws, "race/d/victim", 0o644, false, strings.NewReader("written\n"))
				return err
			},
			func() error {
				_, err := c.WriteFile(ctx, ws, "race/d/new/file", 0o644, true, strings.NewReader("written\n"))
				return err
			},
			func() error { return c.Mkdir(ctx, ws, "race/d/dir"+strconv.Itoa(i), 0o755, true) },
			func() error { _, _, err := c.TarIn(ctx, ws, "race/d", bytes.NewReader(archive.Bytes())); return err },
			func() error { return c.Remove(ctx, ws, "race/d/victim", false) },
			func() error { return c.Remove(ctx, ws, "race/d", true) },
		}
		for _, op := range ops {
			if op() == nil {
				ok++
			} else {
				refused++
			}
		}
	}
	if err := sb.client.Mkdir(ctx, ws, "race/stop", 0o755, false); err != nil {
		t.Fatal(err)
	}
	if err := <-flipDone; err != nil {
		t.Fatalf("the flipping process: %v: %s", err, flipOut.String())
	}
	t.Logf("%d calls succeeded and %d failed while a process inside made %s", ok, refused, strings.TrimSpace(flipOut.String()))
	if ok == 0 {
		t.Fatal("no call succeeded: the race never let a write through the real directory, so it tested nothing")
	}
	if got := sb.mustRun(t, "cd "+outside+" && find . | sort && cat victim"); got != ".\n./victim\nsentinel" {
		t.Fatalf("the directory outside the workspace changed during the race:\n%s", got)
	}
}

// testHardlinks tries to hard-link files the sandbox does not own (host files shown
// read-only, the guest binary, its identity files) into every place it may write: each
// link must fail or give a file it cannot write. An archive's hard-link entries must not
// make one either.
func testHardlinks(t T, sb *sandbox) {
	fails := sb.probe(t, `
import os
sources = ["/etc/passwd", "/etc/group", "/etc/hostname", "/etc/hosts", "/etc/os-release", "/etc/shadow",
           "/bin/sh", "/usr/bin/env", "/opt/paddock/bin/paddock"]
dests = ["/workspace", "/home/agent", "/tmp", "/var/tmp", "/dev/shm", "/run"]
made = 0
for src in sources:
    if not os.path.exists(src):
        continue
    for d in dests:
        if not os.access(d, os.W_OK):
            continue
        dst = os.path.join(d, "hardlink-probe")
        try:
            os.link(src, dst)
        except OSError:
            continue
        made += 1
        try:
            with open(dst, "ab"):
                pass
            print("FAIL a writable hard link to", src, "in", d)
        except OSError:
            pass
        finally:
            os.unlink(dst)
print("links made (read-only):", made)
print("done")
`)
	noFailures(t, "hard links to files the sandbox does not own", fails)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, target := range []string{"/etc/passwd", "../../../../etc/passwd", "/opt/paddock/bin/paddock"} {
		tw.WriteHeader(&tar.Header{Name: "hl" + strconv.Itoa(i), Linkname: target, Typeflag: tar.TypeLink})
	}
	tw.Close()
	c := sb.client
	c.TarIn(ctxT(t), ws, "tarlinks", &buf) // refused or skipped: either way no link
	if got := sb.mustRun(t, "find /workspace/tarlinks -type f -links +1 2>/dev/null | head"); got != "" {
		t.Fatalf("a tar through the Files API made hard links: %s", got)
	}
}

// testOwnPids checks the sandbox sees its own processes only: a process the host runs
// with a unique name must not be among them.
func testOwnPids(t T, sb *sandbox) {
	marker := "paddock-host-marker-" + randomHex(4)
	cmd := exec.Command("sleep", "600")
	cmd.Args[0] = marker
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	fails := sb.probe(t, `
import os
marker = os.environ["MARKER"]
pids = [p for p in os.listdir("/proc") if p.isdigit()]
for p in pids:
    try:
        cmdline = open("/proc/%s/cmdline" % p, "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue
    if marker in cmdline:
        print("FAIL the host's process is visible as pid", p, ":", cmdline)
print("processes seen:", len(pids))
print("done")
`, "MARKER="+marker)
	noFailures(t, "host processes visible in the sandbox", fails)
}

// testKernelReadOnly checks nothing under /proc/sys, the other kernel knobs under /proc,
// or /sys can be written: each tree is on a read-only mount, or (bwrap, whose unprivileged
// mode leaves /proc/sys on the proc mount) no file in it opens for writing, since uid 0 is
// not mapped in the sandbox and nothing in it holds a capability.
func testKernelReadOnly(t T, sb *sandbox) {
	fails := sb.probe(t, `
import errno, os
def readonly(p):
    try:
        return os.statvfs(p).f_flag & os.ST_RDONLY
    except OSError as e:
        if e.errno != errno.ENOSYS:
            raise
        return False  # no statfs on this file system (gVisor's proc): every file is tried
def try_open(p):
    try:
        fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return
    os.close(fd)
    print("FAIL", p, "opens for writing")
checked = 0
for top in ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/sys"]:
    if not os.path.exists(top) or readonly(top):
        continue
    if not os.path.isdir(top):
        try_open(top)
        continue
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if not readonly(os.path.join(dirpath, d))]
        for name in filenames:
            checked += 1
            try_open(os.path.join(dirpath, name))
print("files tried on writable mounts:", checked)
print("done")
`)
	noFailures(t, "kernel interfaces writable", fails)
}

// testPrivileges checks every process in the sandbox (the one probing, the guest, its
// init) has no_new_privs set and no capabilities at all.
func testPrivileges(t T, sb *sandbox) {
	fails := sb.probe(t, `
import os
checked = 0
unreported = set()
for p in ["self"] + [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        status = open("/proc/%s/status" % p).read()
        name = " ".join(open("/proc/%s/cmdline" % p, "rb").read().decode(errors="replace").split("\0")[:3])[:60]
    except OSError:
        continue
    fields = dict(l.split(":", 1) for l in status.splitlines() if ":" in l)
    fields = {k: v.strip() for k, v in fields.items()}
    if fields.get("State", "").startswith("Z"):
        continue
    checked += 1
    # gVisor's kernel reports neither NoNewPrivs nor CapAmb; every kernel reports these.
    for must in ["CapEff", "CapPrm", "CapBnd"]:
        if must not in fields:
            print("FAIL pid", p, name, "reports no", must)
    if "NoNewPrivs" not in fields:
        unreported.add("NoNewPrivs")
    elif fields["NoNewPrivs"] != "1":
        print("FAIL no_new_privs is not set for pid", p, name)
    for cap in ["CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh"]:
        if cap not in fields:
            unreported.add(cap)
        elif int(fields[cap], 16) != 0:
            print("FAIL pid", p, name, "has", cap, fields.get(cap))
print("processes checked:", checked, "; not reported by this kernel:", sorted(unreported))
print("done")
`)
	noFailures(t, "privileges in the sandbox", fails)
}

// testHostSockets checks no way to the host's services is visible: no docker, containerd,
// podman or D-Bus socket, no ssh agent (the host's SSH_AUTH_SOCK points at a live one
// during the check), no Kubernetes service-account token, and no abstract unix socket of
// the host.
func testHostSockets(t T, sb *sandbox) {
	sshDir := shortDir(t)
	sshSock := filepath.Join(sshDir, "agent.sock")
	ssh, err := net.Listen("unix", sshSock)
	if err != nil {
		t.Fatal(err)
	}
	defer ssh.Close()
	t.Setenv("SSH_AUTH_SOCK", sshSock) // on the process, where a backend would leak it from
	abstract := "paddock-conformance-" + randomHex(4)
	abs, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer abs.Close()
	accepted := acceptAny(ssh, abs)

	fails := sb.probe(t, `
import os, socket, glob
for k in ["SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS", "DOCKER_HOST",
          "CONTAINER_HOST", "KUBERNETES_SERVICE_HOST", "KUBERNETES_PORT", "XDG_RUNTIME_DIR"]:
    if k in os.environ:
        print("FAIL the environment has", k, "=", os.environ[k])
paths = [os.environ["HOST_SSH_SOCK"], "/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
         "/run/podman/podman.sock", "/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket",
         "/var/run/secrets/kubernetes.io/serviceaccount/token", "/run/secrets/kubernetes.io/serviceaccount/token",
         "/var/run/secrets/kubernetes.io", "/run/secrets/kubernetes.io"]
paths += glob.glob("/run/user/*/bus") + glob.glob("/run/user/*/docker.sock") + glob.glob("/tmp/ssh-*/agent.*")
for p in paths:
    if os.path.lexists(p):
        print("FAIL", p, "exists in the sandbox")
def connect(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(addr)
        return True
    except OSError:
        return False
    finally:
        s.close()
if connect(os.environ["HOST_SSH_SOCK"]):
    print("FAIL connected to the host's ssh agent socket")
if connect("\0" + os.environ["HOST_ABSTRACT"]):
    print("FAIL connected to the host's abstract unix socket @" + os.environ["HOST_ABSTRACT"])
# Any socket on a filesystem the host provides.
for top in ["/etc", "/var", "/opt", "/srv", "/mnt", "/media", "/root", "/home"]:
    for dirpath, dirnames, filenames in os.walk(top):
        for name in filenames:
            p = os.path.join(dirpath, name)
            try:
                if os.stat(p, follow_symlinks=False).st_mode & 0o170000 == 0o140000:
                    print("FAIL a unix socket is visible at", p)
            except OSError:
                pass
print("done")
`, "HOST_SSH_SOCK="+sshSock, "HOST_ABSTRACT="+abstract)
	noFailures(t, "host sockets reachable from the sandbox", fails)
	select {
	case addr := <-accepted:
		t.Errorf("the host's socket %s accepted a connection from the sandbox", addr)
	default:
	}
}

// acceptAny accepts on each listener and reports the address of any that got a connection.
func acceptAny(lns ...net.Listener) <-chan string {
	got := make(chan string, len(lns))
	for _, ln := range lns {
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Close()
				got <- ln.Addr().String()
			}
		}()
	}
	return got
}

// shortDir is a temporary directory with a path short enough for a unix socket.
func shortDir(t T) string {
	dir, err := os.MkdirTemp("", "pdk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// testTIOCSTI checks a process inside cannot push input into a terminal outside: without
// a terminal it has none (no controlling terminal in any process of the sandbox, no
// terminal among anyone's descriptors but the sandbox's own pseudo-terminals, TIOCSTI
// refused on its streams); with one, what it pushes lands in its own pseudo-terminal,
// read back by itself, or is refused.
func testTIOCSTI(t T, sb *sandbox) {
	fails := sb.probe(t, `
import os, fcntl, stat
TIOCSTI = 0x5412  # termios.TIOCSTI, when python3-minimal has no termios module
own = os.stat("/dev/pts").st_dev
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, TIOCSTI, b"x")
        print("FAIL TIOCSTI on fd", fd, "succeeded")
    except OSError:
        pass
try:
    fd = os.open("/dev/tty", os.O_RDWR)
    print("FAIL /dev/tty opened: the process has a controlling terminal")
    os.close(fd)
except OSError:
    pass
for p in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        fields = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    if fields[4] != "0":
        print("FAIL pid", p, "has a controlling terminal, device", fields[4])
    try:
        fds = os.listdir("/proc/%s/fd" % p)
    except OSError:
        continue
    for fd in fds:
        try:
            st = os.stat("/proc/%s/fd/%s" % (p, fd))
        except OSError:
            continue
        if not stat.S_ISCHR(st.st_mode):
            continue
        major, minor = os.major(st.st_rdev), os.minor(st.st_rdev)
        tty = major == 4 or (major == 5 and minor != 2) or 136 <= major <= 143
        if (tty or major == 5) and st.st_dev != own and not (major == 5 and minor == 2):
            print("FAIL pid", p, "fd", fd, "is a terminal that is not the sandbox's:", os.readlink("/proc/%s/fd/%s" % (p, fd)))
        elif tty and major in (4, 5):
            print("FAIL pid", p, "fd", fd, "is the console or a controlling terminal:", os.readlink("/proc/%s/fd/%s" % (p, fd)))
print("done")
`)
	noFailures(t, "terminals reachable from a process without one", fails)

	// With a terminal: inject, then read back.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stdinR, stdinW := ioPipe()
	defer stdinW.Close()
	out := &syncBuffer{}
	code, err := sb.client.Exec(ctx, guestclient.ExecOptions{Argv: []string{"python3", "-c", `
import os, fcntl, select
try:
    for c in b"injected-by-sandbox\n":
        fcntl.ioctl(0, 0x5412, bytes([c]))  # TIOCSTI
except OSError as e:
    print("REFUSED", e.errno, end="\r\n")
else:
    got = b""
    while b"\n" not in got and select.select([0], [], [], 5)[0]:
        got += os.read(0, 100)
    print("OWN" if got == b"injected-by-sandbox\n" else "LOST %r" % got, end="\r\n")
`}, TTY: true, Size: guestclient.Size{Rows: 24, Cols: 80}, Stdin: stdinR, Stdout: out})
	if err != nil || code != 0 {
		t.Fatalf("TIOCSTI probe with a terminal: code %d, %v: %q", code, err, out.String())
	}
	// The terminal echoes the injected line before the verdict.
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if got := strings.TrimSpace(lines[len(lines)-1]); got != "OWN" && !strings.HasPrefix(got, "REFUSED") {
		t.Fatalf("TIOCSTI on the process's own terminal: %q, want its input back (OWN) or a refusal", got)
	}
}

// testOutputFlood runs `yes` and checks that the host side's memory stays bounded while
// the reader does not keep up, that cancelling the call returns within a second, and that
// the process is gone inside the sandbox within a second too.
func testOutputFlood(t T, sb *sandbox) {
	marker := "paddock-flood-" + randomHex(4)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	agentRSS := func() int {
		n, _ := strconv.Atoi(sb.mustRun(t, `for p in /proc/[0-9]*; do
			case "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in *"paddock agent"*|*"paddock guest"*|*"/opt/paddock/bin/paddock"*) awk '/^VmRSS/ {print $2}' $p/status;; esac
		done | awk '{s += $1} END {print s + 0}'`))
		return n << 10
	}
	before, rssBefore := heap(), agentRSS()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &stallingWriter{release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := sb.client.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", "exec yes " + marker}, Stdout: w})
		done <- err
	}()
	// The reader takes one write and then stalls, as a terminal that stopped reading
	// would; the sandbox keeps producing as fast as it may meanwhile.
	deadline := time.Now().Add(20 * time.Second)
	for w.n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if w.n.Load() == 0 {
		t.Fatal("no output from yes")
	}
	time.Sleep(2 * time.Second)
	const bound = 64 << 20
	heapGrown, rssGrown := int64(heap())-int64(before), agentRSS()-rssBefore
	t.Logf("while the reader stalled: host heap %+d KiB, agent memory %+d KiB", heapGrown>>10, rssGrown>>10)
	if heapGrown > bound {
		t.Errorf("the host's heap grew by %d MiB while the reader stalled: output is buffered without bound", heapGrown>>20)
	}
	if rssGrown > bound {
		t.Errorf("the agent's memory grew by %d MiB while the reader stalled", rssGrown>>20)
	}
	close(w.release)
	for w.n.Load() < 64<<20 && time.Now().Before(deadline.Add(time.Minute)) {
		time.Sleep(10 * time.Millisecond)
	}
	if w.n.Load() < 64<<20 {
		t.Fatalf("only %d bytes of output arrived once the reader went on", w.n.Load())
	}

	cancel()
	cancelled := time.Now()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled exec of yes reported success")
		}
	case <-time.After(time.Second):
		t.Fatal("Exec did not return within a second of being cancelled while the output flooded")
	}
	for {
		count := sb.mustRun(t, countArgs("yes "+marker))
		if count == "0" {
			break
		}
		if time.Since(cancelled) > time.Second {
			t.Fatalf("yes still runs in the sandbox a second after the call was cancelled (%s processes)", count)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stallingWriter accepts one write, blocks the next until release is closed, and then
// counts and discards everything.
type stallingWriter struct {
	n       atomic.Int64
	release chan struct{}
}

func (w *stallingWriter) Write(p []byte) (int, error) {
	if w.n.Load() > 0 {
		<-w.release
	}
	w.n.Add(int64(len(p)))
	return len(p), nil
}
