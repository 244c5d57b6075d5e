package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/backend"
)

// The direct channel: the guest also listens on a unix socket in a small tmpfs of the
// container's own, and the daemon connects to it through the container's root as the
// host sees it (/proc/PID/root), so a connection's bytes go from one process to the
// other through the kernel instead of through the engine's exec stream (a hijacked HTTP
// connection, copied by dockerd and by the runtime's shim on the way). The exec bridge
// stays the channel whenever the direct one is absent or not to be trusted: remote
// engines, runsc, a daemon not run by root, sandboxes made before it, or a socket the
// sandbox has tampered with.
//
// The directory is the sandbox's: a tmpfs of 64 KiB and 16 inodes, nosuid, nodev and
// noexec, charged to the container's memory, that no host path shows. Whatever the agent
// makes there (a setuid file, a FIFO, links, a large file) stays in the container and goes
// with it. Sandboxes of older paddocks bind-mounted a host directory there (under
// <Env.Dir>/direct), which Destroy still removes. The sandbox controls what the directory
// holds and its whole root: so the daemon finds the container's process 1 in its PID
// namespace as last inspected, resolves the socket's path beneath its root without
// following a symlink (openat2, RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), checks it is a
// socket, connects through its descriptor, and checks the peer is a process of the
// sandbox's user in the container's PID namespace before saying a word.
const (
	// directTarget is where the sandbox sees its directory.
	directTarget = "/run/paddock-direct"
	// directSocket is the guest's socket there.
	directSocket = directTarget + "/agent.sock"
	// directTmpfs are the directory's mount options: room for the socket and little else.
	directTmpfs = "mode=0700,uid=1000,gid=1000,size=64k,nr_inodes=16"
	// sandboxUID is the sandbox's user as the host sees it (no user namespace remapping).
	sandboxUID = 1000
)

// errNoDirect says the direct channel is not there to use (no directory, no socket, or
// nothing listening): the exec bridge is the channel.
var errNoDirect = errors.New("no direct channel")

// canDirect says whether this backend gives sandboxes the direct channel: it has a
// directory of its own (the daemon's), runs as root, and its engine answers on a local
// unix socket.
func (d *Docker) canDirect() bool {
	return d.dir != "" && os.Geteuid() == 0 && strings.HasPrefix(d.cli.DaemonHost(), "unix://")
}

// directDir is the host directory an older paddock bind-mounted as a sandbox's direct
// channel, or "" when this backend has none.
func (d *Docker) directDir(id backend.ID) string {
	if !d.canDirect() {
		return ""
	}
	return filepath.Join(d.dir, "direct", string(id))
}

// engineHere says whether the engine runs on this machine and as this machine's root: its
// name is this host's, and it remaps no users (userns-remap, rootless), whose uid 1000
// inside would not be the host's nor its PIDs this machine's. The answer is kept; an
// engine that cannot answer is asked again next time.
func (d *Docker) engineHere(ctx context.Context) bool {
	d.mu.Lock()
	known, here := d.hereKnown, d.here
	d.mu.Unlock()
	if known {
		return here
	}
	info, err := d.cli.Info(ctx)
	if err != nil {
		return false
	}
	host, err := os.Hostname()
	here = err == nil && info.Name == host
	for _, o := range info.SecurityOptions {
		if strings.Contains(o, "name=userns") || strings.Contains(o, "name=rootless") {
			here = false
		}
	}
	d.mu.Lock()
	d.hereKnown, d.here = true, here
	d.mu.Unlock()
	return here
}

// wantsDirect says whether a sandbox made now gets the direct channel: gVisor keeps the
// sockets bound inside to itself, and a remote or remapping engine's PIDs and users are
// not this host's.
func (d *Docker) wantsDirect(ctx context.Context, runtime string) bool {
	return d.canDirect() && runtime != Runsc && d.engineHere(ctx)
}

// removeDirectDir removes the host directory an older paddock made for the sandbox and
// what the sandbox put in it; os.RemoveAll removes symlinks, never what they point to.
func (d *Docker) removeDirectDir(id backend.ID) error {
	dir := d.directDir(id)
	if dir == "" {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the sandbox's socket directory: %w", err)
	}
	return nil
}

// errStale says the container's process 1 as last inspected is gone or another: inspect
// it again.
var errStale = errors.New("the container's process changed")

// directProc is what the direct channel knows of a sandbox's container, as last inspected.
type directProc struct {
	pid    int    // its process 1, on the host
	ns     string // its PID namespace
	direct bool   // its guest listens on directSocket
}

// dialDirect connects to the guest's socket in the sandbox's directory. It returns an
// error wrapping errNoDirect when there is nothing to connect to, and another error when
// what is there is not the sandbox's guest: a symlink or anything but a socket in its
// place, or a peer that is not a process of the sandbox.
func (d *Docker) dialDirect(ctx context.Context, id backend.ID) (net.Conn, error) {
	if !d.canDirect() {
		return nil, errNoDirect
	}
	for fresh := false; ; fresh = true {
		conn, err := d.dialDirectOnce(ctx, id, fresh)
		if !errors.Is(err, errStale) {
			return conn, err
		}
		if fresh {
			return nil, fmt.Errorf("%w: %v", errNoDirect, err)
		}
	}
}

// dialDirectOnce is dialDirect with the container as last inspected, or inspected again
// when fresh.
func (d *Docker) dialDirectOnce(ctx context.Context, id backend.ID, fresh bool) (net.Conn, error) {
	p, err := d.containerProc(ctx, id, fresh)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoDirect, err)
	}
	if !p.direct {
		return nil, errNoDirect
	}
	// The descriptor of /proc/PID names that one process: if it ends and its PID is
	// taken again, what is opened through it fails instead of naming the new one.
	procfd, err := unix.Open("/proc/"+strconv.Itoa(p.pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errStale, err)
	}
	defer unix.Close(procfd)
	if ns, err := readlinkAt(procfd, "ns/pid"); err != nil || ns != p.ns {
		return nil, errStale
	}
	rootfd, err := unix.Openat(procfd, "root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errStale, err)
	}
	defer unix.Close(rootfd)
	fd, err := unix.Openat2(rootfd, strings.TrimPrefix(directSocket, "/"), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("%w: the guest has not made its socket", errNoDirect)
	case errors.Is(err, unix.ENOSYS):
		return nil, fmt.Errorf("%w: this kernel has no openat2", errNoDirect)
	case err != nil:
		return nil, fmt.Errorf("open the guest's socket: %w", err) // ELOOP: a symlink
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat the guest's socket: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("the guest's socket %s in %s is not a socket (mode %o): refused", directSocket, id, st.Mode)
	}
	// The descriptor names the inode just checked; connecting through it cannot be
	// redirected by a rename or a symlink put in its place since.
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
	if errors.Is(err, unix.ECONNREFUSED) {
		return nil, fmt.Errorf("%w: nothing listens on the guest's socket", errNoDirect)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to the guest's socket: %w", err)
	}
	if err := d.checkPeer(ctx, id, conn.(*net.UnixConn)); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// readlinkAt reads the symlink name beneath the directory dirfd.
func readlinkAt(dirfd int, name string) (string, error) {
	buf := make([]byte, 128)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// checkPeer makes sure the process at the other end is one of the sandbox's: its user,
// in its container's PID namespace.
func (d *Docker) checkPeer(ctx context.Context, id backend.ID, conn *net.UnixConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("the guest's peer credentials: %w", credErr)
	}
	if cred.Uid != sandboxUID {
		return fmt.Errorf("the process on the guest's socket of %s runs as uid %d, not the sandbox's %d: refused", id, cred.Uid, sandboxUID)
	}
	peerNS, err := pidNamespace(int(cred.Pid))
	if err != nil {
		return fmt.Errorf("the PID namespace of the process on the guest's socket: %w", err)
	}
	for fresh := false; ; fresh = true {
		p, err := d.containerProc(ctx, id, fresh)
		if err != nil {
			return err
		}
		if p.ns == peerNS {
			return nil
		}
		if fresh {
			return fmt.Errorf("the process on the guest's socket of %s is not in its container: refused", id)
		}
	}
}

// containerProc is the sandbox's container as the direct channel needs it, kept per
// sandbox until fresh asks for it again (its container restarted, with a new process 1
// and PID namespace).
func (d *Docker) containerProc(ctx context.Context, id backend.ID, fresh bool) (directProc, error) {
	d.mu.Lock()
	p, ok := d.procs[id]
	d.mu.Unlock()
	if ok && !fresh {
		return p, nil
	}
	c, err := d.cli.ContainerInspect(ctx, containerName(id))
	if err != nil {
		return directProc{}, fmt.Errorf("inspect the sandbox's container: %w", err)
	}
	if c.State == nil || c.State.Pid == 0 {
		return directProc{}, fmt.Errorf("sandbox %s: %w", id, backend.ErrNotRunning)
	}
	ns, err := pidNamespace(c.State.Pid)
	if err != nil {
		return directProc{}, fmt.Errorf("the PID namespace of the sandbox's container: %w", err)
	}
	p = directProc{pid: c.State.Pid, ns: ns,
		direct: c.Config != nil && slices.Contains(c.Config.Cmd, directSocket) && c.HostConfig != nil && c.HostConfig.Runtime != Runsc}
	d.mu.Lock()
	d.procs[id] = p
	d.mu.Unlock()
	return p, nil
}

// pidNamespace names the PID namespace of a host process.
func pidNamespace(pid int) (string, error) {
	return os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
}
