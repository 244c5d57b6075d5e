package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/mount"
	"golang.org/x/sys/unix"

	"github.com/paddockhq/paddock/internal/backend"
)

// The direct channel: the guest also listens on a unix socket in a directory of the
// host bind-mounted into the container, and the daemon connects to it there, so a
// connection's bytes go from one process to the other through the kernel instead of
// through the engine's exec stream (a hijacked HTTP connection, copied by dockerd and by
// the runtime's shim on the way). The exec bridge stays the channel whenever the direct
// one is absent or not to be trusted: remote engines, runsc, a daemon not run by root,
// sandboxes made before it, or a socket the sandbox has tampered with.
//
// The host's side: <Env.Dir>/direct, mode 0700 and the daemon's, holds one directory per
// sandbox, owned by the sandbox's user so that its guest can make its socket there. The
// sandbox controls what that directory holds, never the directory itself or its parent:
// so the daemon opens the socket's entry without following a symlink (O_PATH|O_NOFOLLOW),
// checks it is a socket, connects through its descriptor, and checks the peer is a
// process of the sandbox's user in the container's PID namespace before saying a word.
const (
	// directTarget is where the sandbox sees its directory.
	directTarget = "/run/paddock-direct"
	// directSocket is the guest's socket there.
	directSocket = directTarget + "/agent.sock"
	// sandboxUID is the sandbox's user as the host sees it (no user namespace remapping).
	sandboxUID = 1000
)

// errNoDirect says the direct channel is not there to use (no directory, no socket, or
// nothing listening): the exec bridge is the channel.
var errNoDirect = errors.New("no direct channel")

// directRoot is the host directory of the sandboxes' directories, or "" when this
// backend has no direct channel.
func (d *Docker) directRoot() string {
	if d.dir == "" || os.Geteuid() != 0 || !strings.HasPrefix(d.cli.DaemonHost(), "unix://") {
		return ""
	}
	return filepath.Join(d.dir, "direct")
}

// directDir is the host directory of one sandbox's direct channel, or "".
func (d *Docker) directDir(id backend.ID) string {
	root := d.directRoot()
	if root == "" {
		return ""
	}
	return filepath.Join(root, string(id))
}

// engineHere says whether the engine runs on this machine and as this machine's root: its
// name is this host's, and it remaps no users (userns-remap, rootless), whose uid 1000
// inside would not own the directory. The answer is kept; an engine that cannot answer is
// asked again next time.
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

// makeDirectDir makes the sandbox's directory, given to its user, and returns the mount
// that shows it inside; nil when the sandbox gets no direct channel.
func (d *Docker) makeDirectDir(ctx context.Context, spec backend.Spec, runtime string) (*mount.Mount, error) {
	dir := d.directDir(spec.ID)
	// gVisor keeps the sockets bound inside to itself: the host could not connect.
	if dir == "" || runtime == Runsc || !d.engineHere(ctx) {
		return nil, nil
	}
	root := filepath.Dir(dir)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("make the sandboxes' socket directory: %w", err)
	}
	if err := os.Chmod(root, 0o700); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("make the sandbox's socket directory: %w", err)
	}
	// Lchown: never follow what might be there; the entry was made just now by us in a
	// directory only we can write.
	if err := os.Lchown(dir, sandboxUID, sandboxUID); err != nil {
		return nil, fmt.Errorf("give the sandbox its socket directory: %w", err)
	}
	return &mount.Mount{Type: mount.TypeBind, Source: dir, Target: directTarget}, nil
}

// removeDirectDir removes the sandbox's directory and what the sandbox put in it;
// os.RemoveAll removes symlinks, never what they point to.
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

// dialDirect connects to the guest's socket in the sandbox's directory. It returns an
// error wrapping errNoDirect when there is nothing to connect to, and another error when
// what is there is not the sandbox's guest: a symlink or anything but a socket in its
// place, or a peer that is not a process of the sandbox.
func (d *Docker) dialDirect(ctx context.Context, id backend.ID) (net.Conn, error) {
	dir := d.directDir(id)
	if dir == "" {
		return nil, errNoDirect
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, errNoDirect
	}
	if err != nil {
		return nil, fmt.Errorf("open the sandbox's socket directory: %w", err)
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, filepath.Base(directSocket), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%w: the guest has not made its socket", errNoDirect)
	}
	if err != nil {
		return nil, fmt.Errorf("open the guest's socket: %w", err) // ELOOP: a symlink
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat the guest's socket: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("the guest's socket in %s is not a socket (mode %o): refused", dir, st.Mode)
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
		ns, err := d.containerPidNS(ctx, id, fresh)
		if err != nil {
			return err
		}
		if ns == peerNS {
			return nil
		}
		if fresh {
			return fmt.Errorf("the process on the guest's socket of %s is not in its container: refused", id)
		}
	}
}

// containerPidNS is the PID namespace of the sandbox's container, kept per sandbox until
// fresh asks for it again (its container restarted, with a new namespace).
func (d *Docker) containerPidNS(ctx context.Context, id backend.ID, fresh bool) (string, error) {
	d.mu.Lock()
	ns, ok := d.pidNS[id]
	d.mu.Unlock()
	if ok && !fresh {
		return ns, nil
	}
	c, err := d.cli.ContainerInspect(ctx, containerName(id))
	if err != nil {
		return "", fmt.Errorf("inspect the sandbox's container: %w", err)
	}
	if c.State == nil || c.State.Pid == 0 {
		return "", fmt.Errorf("sandbox %s: %w", id, backend.ErrNotRunning)
	}
	ns, err = pidNamespace(c.State.Pid)
	if err != nil {
		return "", fmt.Errorf("the PID namespace of the sandbox's container: %w", err)
	}
	d.mu.Lock()
	d.pidNS[id] = ns
	d.mu.Unlock()
	return ns, nil
}

// pidNamespace names the PID namespace of a host process.
func pidNamespace(pid int) (string, error) {
	return os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
}
