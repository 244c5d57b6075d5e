// Package bwrap runs sandboxes as bubblewrap namespaces: the host's /usr (or a rootfs
// directory) read-only, a writable /workspace and a private home for the non-root user
// agent (uid 1000 inside), and their own pid, ipc, uts, cgroup and network namespaces
// with loopback only. Every process in it runs under a seccomp filter (internal/seccomp),
// and paddock's own configuration is masked where the host's /etc shows through.
//
// bwrap takes its options from a descriptor (--args), not its command line, which every
// user of the host can read and which would carry the sandbox's placeholder key.
//
// The resident guest is the sandbox's only long-lived process at start. It serves a
// unix listener that the backend creates on the host, beneath the backend's own
// directory, and hands to bwrap as an inherited file descriptor: the sandbox never sees
// the socket's path, so nothing planted inside can redirect the daemon's connections. The
// bwrap process runs in its own session, detached from the daemon, so sandboxes outlive
// a daemon restart.
package bwrap

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/seccomp"
)

// Name is the registry name.
const Name = "bwrap"

// description is what the backend is: namespaces under the host's kernel, running the
// host's own programs, the default backend where it works (nothing to install but
// bubblewrap, quick to start), and a host's first offer to another machine's daemon.
var description = backend.Description{Isolation: backend.IsolationNamespaces, HostSystem: true, Default: 1, Serves: true,
	Limits: true, DiskLimit: true, Tools: []backend.Tool{{Name: "bubblewrap", Argv: []string{"bwrap", "--version"}}}}

func init() {
	backend.Register(Name, description, func(env backend.Env) (backend.Backend, error) { return New(env) })
}

// rootHostID is the host uid and gid that the sandbox user maps to when the daemon runs
// as root. Mapping to root itself would let the sandbox read root-owned files in the
// read-only host directories (/etc/shadow, host keys): a uid that owns nothing prevents it.
const rootHostID = 2_000_000_000

// Bwrap is the bubblewrap backend.
type Bwrap struct {
	dir    string // one subdirectory per sandbox
	rootfs string // default rootfs; empty means host directories
	bwrap  string // path of the bwrap binary; empty when not installed
	wanted string // the bwrap binary asked for, for messages
	hostID int    // host uid/gid of the sandbox user when running as root; 0 otherwise

	cg       *cgroupHost // where sandboxes' cgroups go, or why they get none
	noLimits bool        // no cgroup and unsized mounts: the benchmarks' baseline

	filter    []byte   // the seccomp filter every sandbox runs under
	filterErr error    // why there is none for this machine
	noSeccomp bool     // sandboxes run without it: the benchmarks' baseline only
	hide      []string // host paths masked in every sandbox (backend.Env.Hide)

	mu    sync.Mutex
	procs map[backend.ID]*exec.Cmd // bwrap processes this process started, to reap them
	// limits holds each running sandbox's limits once read: they are set when it
	// starts and never change while it runs, and reading them is a dozen cgroup files,
	// which `ls` of hundreds of sandboxes felt.
	limits map[backend.ID]runLimits
}

// runLimits are the limits read for one run of a sandbox, known by its init's start time.
type runLimits struct {
	start  uint64
	limits backend.Limits
}

var _ backend.Backend = (*Bwrap)(nil)

// New constructs the backend. Options: rootfs (a directory used as / instead of the
// host's directories), bwrap (the bubblewrap binary, when not "bwrap" on PATH) and
// cgroup_parent (where sandboxes' cgroups go, below each hierarchy's root: "paddock").
func New(env backend.Env) (*Bwrap, error) {
	b := &Bwrap{dir: env.Dir, procs: map[backend.ID]*exec.Cmd{}, limits: map[backend.ID]runLimits{}, hide: env.Hide}
	b.filter, b.filterErr = compileFilter()
	for key := range env.Options {
		if key != "rootfs" && key != "bwrap" && key != "cgroup_parent" {
			return nil, fmt.Errorf("backends.bwrap: unknown option %q (known: rootfs, bwrap, cgroup_parent)", key)
		}
	}
	parent, err := cgroupParent(env.Options)
	if err != nil {
		return nil, err
	}
	b.cg = detectCgroups(parent)
	rootfs, err := absOption(env.Options, "rootfs")
	if err != nil {
		return nil, err
	}
	b.rootfs = rootfs
	bin, err := absOption(env.Options, "bwrap")
	if err != nil {
		return nil, err
	}
	if bin == "" {
		bin = "bwrap"
	}
	if p, err := exec.LookPath(bin); err == nil {
		b.bwrap = p
	}
	b.wanted = bin
	if os.Geteuid() == 0 {
		b.hostID = rootHostID
	}
	return b, nil
}

// compileFilter compiles the seccomp filter for this machine's architecture.
func compileFilter() ([]byte, error) {
	arch, err := seccomp.ArchFor(runtime.GOARCH)
	if err != nil {
		return nil, err
	}
	return seccomp.Compile(arch)
}

func absOption(opts map[string]any, key string) (string, error) {
	v, ok := opts[key]
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok || !filepath.IsAbs(s) {
		return "", fmt.Errorf("backends.bwrap.%s must be an absolute path, got %v", key, v)
	}
	return s, nil
}

// Name implements backend.Backend.
func (b *Bwrap) Name() string { return Name }

// Describe implements backend.Backend: the same wherever it runs.
func (b *Bwrap) Describe() backend.Description { return description }

// Available runs a trivial sandbox to prove bubblewrap and user namespaces work here.
func (b *Bwrap) Available(ctx context.Context) error {
	if b.bwrap == "" {
		return &backend.UnavailableError{Backend: Name, Reason: fmt.Sprintf("bubblewrap is not installed (no %s found)", b.wanted),
			Fix: "install it: sudo apt-get install bubblewrap (Debian/Ubuntu), sudo dnf install bubblewrap (Fedora)"}
	}
	if b.filterErr != nil {
		return &backend.UnavailableError{Backend: Name, Reason: b.filterErr.Error(),
			Fix: "use the docker backend on this machine"}
	}
	if b.hostID != 0 {
		if err := searchable(filepath.Dir(b.dir)); err != nil {
			return &backend.UnavailableError{Backend: Name,
				Reason: "running as root, sandboxes run as an unprivileged uid that cannot reach " + b.dir + ": " + err.Error(),
				Fix:    "set PADDOCK_HOME to a directory whose parents are searchable (chmod o+x), e.g. /var/lib/paddock"}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := b.command(ctx, []string{"--unshare-all", "--unshare-user", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"})
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &backend.UnavailableError{Backend: Name,
			Reason: fmt.Sprintf("bwrap cannot create namespaces here: %v: %s", err, trimOutput(out)),
			Fix:    "enable unprivileged user namespaces: sudo sysctl -w kernel.unprivileged_userns_clone=1 (and on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0)"}
	}
	return nil
}

// paths of one sandbox's host-side files.
type paths struct{ root string }

func (b *Bwrap) paths(id backend.ID) paths { return paths{filepath.Join(b.dir, string(id))} }
func (p paths) spec() string               { return filepath.Join(p.root, "spec.json") }
func (p paths) run() string                { return filepath.Join(p.root, "run.json") }
func (p paths) socket() string             { return filepath.Join(p.root, "agent.sock") }
func (p paths) log() string                { return filepath.Join(p.root, "agent.log") }
func (p paths) workspace() string          { return filepath.Join(p.root, "workspace") }
func (p paths) home() string               { return filepath.Join(p.root, "home") }
func (p paths) etc() string                { return filepath.Join(p.root, "etc") }

func validID(id backend.ID) error {
	if id == "" || len(id) > 32 {
		return fmt.Errorf("invalid sandbox id %q", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("invalid sandbox id %q", id)
		}
	}
	return nil
}

// Create makes the sandbox's directories and records its spec.
func (b *Bwrap) Create(ctx context.Context, spec backend.Spec) error {
	if err := validID(spec.ID); err != nil {
		return err
	}
	if spec.GuestBinary == "" {
		return errors.New("create sandbox: no guest binary given")
	}
	if spec.Rootfs == "" {
		spec.Rootfs = b.rootfs
	}
	if spec.Rootfs != "" {
		if fi, err := os.Stat(filepath.Join(spec.Rootfs, "bin", "sh")); err != nil || fi.IsDir() {
			return fmt.Errorf("rootfs %s has no /bin/sh: give a directory holding a Linux root filesystem (e.g. made by mmdebstrap)", spec.Rootfs)
		}
		if b.hostID != 0 {
			if err := searchable(spec.Rootfs); err != nil {
				return fmt.Errorf("rootfs %s: the sandbox runs as an unprivileged uid that cannot reach it: %v", spec.Rootfs, err)
			}
		}
	}
	p := b.paths(spec.ID)
	if _, err := os.Stat(p.spec()); err == nil {
		return nil // idempotent: the sandbox exists
	}
	// As root, bwrap runs as the unprivileged sandbox uid and must be able to reach
	// these directories by path: they are searchable (0711), but not listable, by others.
	if err := mkdirMode(b.dir, b.dirMode()); err != nil {
		return fmt.Errorf("create sandbox dir: %w", err)
	}
	if err := mkdirMode(p.root, b.dirMode()); err != nil {
		return fmt.Errorf("create sandbox dir: %w", err)
	}
	if err := mkdirMode(p.etc(), b.dirMode()); err != nil {
		return fmt.Errorf("create sandbox dir: %w", err)
	}
	if err := b.makeDisk(ctx, spec, p); err != nil {
		return err
	}
	for _, d := range []string{p.workspace(), p.home()} {
		if err := mkdirMode(d, 0o700); err != nil {
			return fmt.Errorf("create sandbox dir: %w", err)
		}
		if err := b.chownSandboxUser(d); err != nil {
			return err
		}
	}
	if err := writeIdentity(p.etc(), spec.Name); err != nil {
		return err
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	// The spec is written last, atomically: its presence means Create completed.
	return writeFileAtomic(p.spec(), data, 0o600)
}

func (b *Bwrap) dirMode() os.FileMode {
	if b.hostID != 0 {
		return 0o711
	}
	return 0o700
}

func mkdirMode(dir string, mode os.FileMode) error {
	if err := os.MkdirAll(dir, mode); err != nil {
		return err
	}
	return os.Chmod(dir, mode)
}

// searchable checks that the sandbox uid can reach path: every directory on the way
// must be searchable by others, since that uid owns none of them.
func searchable(path string) error {
	for dir := path; ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err == nil && fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s (mode %04o) is not searchable by others", dir, fi.Mode().Perm())
		}
		if dir == "/" || dir == "." {
			return nil
		}
	}
}

func (b *Bwrap) chownSandboxUser(path string) error {
	if b.hostID == 0 {
		return nil
	}
	if err := os.Lchown(path, b.hostID, b.hostID); err != nil {
		return fmt.Errorf("give %s to the sandbox user: %w", path, err)
	}
	return nil
}

// writeIdentity writes the passwd, group, hostname and machine-id files bound over the
// sandbox's /etc, so that uid 1000 is the user "agent" whatever the host's /etc says,
// and each sandbox (a fork too) is a machine of its own, not the host nor another.
func writeIdentity(etc, hostname string) error {
	id := make([]byte, 16)
	rand.Read(id)
	files := map[string]string{
		"machine-id": hex.EncodeToString(id) + "\n",
		"passwd":     "root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:paddock agent:/home/agent:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":      "root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n",
		"hostname":   hostname + "\n",
		"hosts":      "127.0.0.1\tlocalhost " + hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n",
	}
	for name, content := range files {
		if err := writeFileAtomic(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (b *Bwrap) readSpec(id backend.ID) (backend.Spec, error) {
	var spec backend.Spec
	data, err := os.ReadFile(b.paths(id).spec())
	if errors.Is(err, os.ErrNotExist) {
		return spec, fmt.Errorf("sandbox %s: %w", id, backend.ErrNotFound)
	}
	if err != nil {
		return spec, err
	}
	return spec, json.Unmarshal(data, &spec)
}

// runInfo identifies the running sandbox's processes. StartTime (from /proc/PID/stat)
// guards against a recycled pid.
type runInfo struct {
	BwrapPID   int    `json:"bwrap_pid"`
	BwrapStart uint64 `json:"bwrap_start_time"`
	ChildPID   int    `json:"child_pid"`
	StartTime  uint64 `json:"child_start_time"`
}

func (b *Bwrap) readRun(id backend.ID) (runInfo, bool) {
	var ri runInfo
	data, err := os.ReadFile(b.paths(id).run())
	if err != nil || json.Unmarshal(data, &ri) != nil || ri.ChildPID <= 0 {
		return ri, false
	}
	return ri, true
}

// alive reports whether the sandbox's init process still runs.
func (ri runInfo) alive() bool {
	st, err := backend.ProcStartTime(ri.ChildPID)
	return err == nil && st == ri.StartTime
}

// State implements backend.Backend.
func (b *Bwrap) State(ctx context.Context, id backend.ID) (backend.Status, error) {
	if _, err := b.readSpec(id); errors.Is(err, backend.ErrNotFound) {
		return backend.Status{State: backend.StateMissing}, nil
	} else if err != nil {
		return backend.Status{State: backend.StateError, Detail: err.Error()}, nil
	}
	ri, ok := b.readRun(id)
	if !ok {
		if _, err := os.Stat(b.paths(id).log()); err == nil {
			return backend.Status{State: backend.StateStopped}, nil
		}
		return backend.Status{State: backend.StateCreated}, nil
	}
	if ri.alive() {
		return backend.Status{State: backend.StateRunning}, nil
	}
	return backend.Status{State: backend.StateStopped, Detail: "the sandbox's processes ended"}, nil
}

// Dial implements backend.Backend.
func (b *Bwrap) Dial(ctx context.Context, id backend.ID) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", b.paths(id).socket())
	if err != nil {
		return nil, fmt.Errorf("dial the guest of sandbox %s: %w", id, err)
	}
	return conn, nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func trimOutput(b []byte) string {
	if len(b) > 400 {
		b = b[len(b)-400:]
	}
	return string(b)
}

// handshake checks that the guest answers on its socket.
func (b *Bwrap) handshake(ctx context.Context, id backend.ID) error {
	conn, err := b.Dial(ctx, id)
	if err != nil {
		return err
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	_, err = guestproto.ClientHandshake(conn, "probe")
	return err
}
