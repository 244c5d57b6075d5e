// Package microvm runs each sandbox as a virtual machine with its own kernel: QEMU's
// microvm machine (KVM where it works, TCG otherwise) or Firecracker. The guest is
// Debian's kernel from /boot, an initramfs paddock writes itself (the guest binary as
// /init, and the modules for virtio-mmio disks and ports, ext4 and overlayfs), the
// image's root file system as a read-only ext4 disk made with mke2fs -d, and a data
// disk per sandbox (/workspace, the home, the writable layer over the root) that stop
// and start keep. The VM has no network device (but with --network open, a user-mode
// one whose gateway is the host's loopback): the guest speaks the guest protocol
// over a virtio-console port QEMU binds to a unix socket, or over a vsock connection
// through Firecracker's unix socket, every connection a stream of one yamux session on
// it (internal/portmux), and the proxies' tunnels ride those connections as on every
// backend.
package microvm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/yamux"

	"github.com/paddockhq/paddock/internal/atomicfile"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/vmspec"
)

// Name is the backend's registry name.
const Name = "microvm"

// PlaceVMM is the placement key of the monitor (`up --vmm`).
const PlaceVMM = "vmm"

// description is what the backend is: a VM with its own kernel, never the default (a
// VM is slower to start than a namespace), whose QEMU VMs can be suspended; it boots a
// built image in a form of its own, on the monitor `up --vmm` names.
var description = backend.Description{Isolation: backend.IsolationVM, OwnKernel: true, Suspend: "QEMU VMs",
	Limits: true, Images: backend.Images{Prepare: true}, Placement: []string{PlaceVMM},
	Tools: []backend.Tool{{Name: "qemu", Argv: []string{"qemu-system-x86_64", "--version"}}}}

func init() {
	backend.Register(Name, description, func(env backend.Env) (backend.Backend, error) { return New(env) })
}

// MicroVM is the backend.
type MicroVM struct {
	dir      string
	shared   string // backend.Env.Shared
	settings Settings
	log      *slog.Logger
	qemu     *qemuVMM

	imageMu sync.Mutex // builds of the kernel, initramfs and root images

	mu       sync.Mutex
	sessions map[backend.ID]*yamux.Session
	consoles map[backend.ID]*consoleCopy
}

var (
	_ backend.Backend     = (*MicroVM)(nil)
	_ backend.LimitReader = (*MicroVM)(nil)
	_ backend.Reporter    = (*MicroVM)(nil)
	_ backend.Suspender   = (*MicroVM)(nil)

	_ backend.ImagePreparer = (*MicroVM)(nil)
)

// New constructs the backend from [backends.microvm].
func New(env backend.Env) (*MicroVM, error) {
	s, err := ParseSettings(env.Options)
	if err != nil {
		return nil, err
	}
	m := &MicroVM{dir: env.Dir, shared: env.Shared, settings: s, log: slog.Default().With("backend", Name), sessions: map[backend.ID]*yamux.Session{},
		consoles: map[backend.ID]*consoleCopy{}}
	m.qemu = &qemuVMM{m: m}
	return m, nil
}

// Name implements backend.Backend.
func (m *MicroVM) Name() string { return Name }

// Describe implements backend.Backend: a VM, emulated where QEMU, the default
// monitor, runs it under TCG (no working /dev/kvm, or accel = "tcg"), and then slow: measured here, about 110 s
// from up to a ready sandbox and about a minute for a trivial agent turn.
func (m *MicroVM) Describe() backend.Description {
	d := description
	if accel, why := m.qemu.accel(); m.settings.VMM != VMMFirecracker && accel == "tcg" {
		d.Emulated = true
		d.Slow = "no KVM (" + why + "): QEMU emulates the processor, about 100 s to start a sandbox and a minute a turn"
	}
	return d
}

// meta is what the backend keeps of a sandbox, in its directory.
type meta struct {
	Name string `json:"name"`
	VMM  string `json:"vmm"`
	// Rootfs is the root file system image the sandbox boots.
	Rootfs string `json:"rootfs"`
	// The guest's binary and sha256 keep their JSON names from before the guest was
	// called the guest: the records of existing sandboxes carry them.
	GuestBinary string `json:"agent_binary"`
	GuestSHA256 string `json:"agent_sha256"`
	// Limits are the sandbox's: the VM's size, and its cgroup's limits inside.
	Limits backend.Limits `json:"limits"`
	// OpenNetwork gives the VM a user-mode network device (`--network open`).
	OpenNetwork bool `json:"open_network,omitempty"`
}

func (m *MicroVM) sandboxDir(id backend.ID) string { return filepath.Join(m.dir, string(id)) }

// imageDir is the image cache: the kernel, initramfs and root file systems, each named
// by what it was made from. It is the daemon's when the backend is made beside it
// (backend.Env.Shared).
func (m *MicroVM) imageDir() string {
	if m.shared != "" {
		return filepath.Join(m.shared, ".images")
	}
	return filepath.Join(m.dir, ".images")
}

// Files of a sandbox's directory.
const (
	metaFile    = "sandbox.json"
	dataDisk    = "data.ext4"
	runningFile = "running" // the VM should run: one that does not has failed
	startedFile = "started" // the VM ran once
	consoleLog  = "console.log"
)

func (m *MicroVM) readMeta(id backend.ID) (meta, error) {
	var md meta
	data, err := os.ReadFile(filepath.Join(m.sandboxDir(id), metaFile))
	if err != nil {
		return md, err
	}
	return md, json.Unmarshal(data, &md)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// Create makes the sandbox's data disk, holding its configuration for the VM's init,
// and finds or makes the root file system image; nothing is started.
func (m *MicroVM) Create(ctx context.Context, spec backend.Spec) error {
	if _, err := m.readMeta(spec.ID); err == nil {
		return nil
	}
	vmm := m.settings.VMM
	for k, v := range spec.Placement {
		switch {
		case k == PlaceVMM && v != "":
			if err := checkVMM(v); err != nil {
				return err
			}
			vmm = v
		case v != "":
			return fmt.Errorf("the microvm backend takes no %q (it takes --vmm)", k)
		}
	}
	if err := m.vmm(vmm).available(ctx); err != nil {
		return err
	}
	if spec.OpenNetwork && vmm != VMMQEMU {
		return fmt.Errorf("microvm: --network open is built for --vmm qemu only (its user-mode network); use --vmm qemu or the closed network")
	}
	rootfs, err := m.rootImage(ctx, spec.Image, func(step string) { m.log.Info(step, "sandbox", spec.Name) })
	if err != nil {
		return err
	}
	limits := backend.LimitsFor(spec)
	md := meta{Name: spec.Name, VMM: vmm, Rootfs: rootfs, GuestBinary: spec.GuestBinary, GuestSHA256: spec.GuestSHA256, Limits: limits,
		OpenNetwork: spec.OpenNetwork}
	dir := m.sandboxDir(spec.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg := vmspec.Config{Name: spec.Name, Env: append(backend.BaseEnv(spec), spec.Env...),
		MemoryBytes: limits.MemoryBytes, CPUs: limits.CPUs, Pids: limits.Pids, TmpBytes: limits.MemoryBytes / 2}
	if spec.OpenNetwork {
		n := vmspec.UserNetwork
		cfg.Network = &n
	}
	if err := m.makeDataDisk(ctx, dir, cfg); err != nil {
		os.RemoveAll(dir)
		return err
	}
	data, _ := json.MarshalIndent(md, "", "  ")
	if err := atomicfile.Write(filepath.Join(dir, metaFile), data, 0o600); err != nil {
		os.RemoveAll(dir)
		return err
	}
	return nil
}

// makeDataDisk writes the sandbox's data disk: its configuration (root's alone inside)
// and the directories init mounts.
func (m *MicroVM) makeDataDisk(ctx context.Context, dir string, cfg vmspec.Config) error {
	size, _ := parseSize(m.settings.DiskSize)
	tree, err := os.MkdirTemp(dir, "data-tree-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	for _, d := range []string{vmspec.WorkspaceDir, vmspec.HomeDir, vmspec.UpperDir, vmspec.WorkDir, filepath.Dir(vmspec.ConfigPath)} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			return err
		}
	}
	os.Chmod(filepath.Join(tree, filepath.Dir(vmspec.ConfigPath)), 0o700)
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(tree, vmspec.ConfigPath), data, 0o600); err != nil {
		return err
	}
	return mkfs(ctx, filepath.Join(dir, dataDisk), vmspec.DataLabel, tree, size)
}

// vmm is the driver of a monitor.
func (m *MicroVM) vmm(name string) vmmDriver {
	if name == VMMFirecracker {
		return &firecrackerVMM{m: m}
	}
	return m.qemu
}

// vmmDriver runs VMs under one monitor.
type vmmDriver interface {
	// available says whether the monitor can run VMs here.
	available(ctx context.Context) error
	// boot starts the VM of a sandbox, detached from the daemon.
	boot(ctx context.Context, id backend.ID, md meta) error
	// status says whether the VM's monitor runs, and how the VM is when it does.
	status(ctx context.Context, id backend.ID) (alive bool, detail string, err error)
	// halt ends the VM at once (its disks as they are).
	halt(ctx context.Context, id backend.ID) error
	// connect opens the session carrying the guest's connections.
	connect(ctx context.Context, id backend.ID) (*yamux.Session, error)
	// control sends a request to the VM's init and returns its answer.
	control(ctx context.Context, id backend.ID, req string) ([]byte, error)
	// suspendable says whether the monitor can save a VM's state: nil, or an error
	// wrapping backend.ErrNotSupported.
	suspendable() error
	// save pauses the running VM and writes its state to path, leaving its monitor
	// running, the VM paused; on failure the VM runs on.
	save(ctx context.Context, id backend.ID, path string) error
	// resume starts the VM from the state saved at path, running once it returns.
	resume(ctx context.Context, id backend.ID, md meta, path string) error
}

// Start boots the VM (again: after a stop, or a monitor that died) unless it runs, or
// resumes it where Suspend saved it, and returns once the guest answers.
func (m *MicroVM) Start(ctx context.Context, id backend.ID) error {
	md, err := m.readMeta(id)
	if err != nil {
		return backend.ErrNotFound
	}
	dir := m.sandboxDir(id)
	d := m.vmm(md.VMM)
	alive, detail, err := d.status(ctx, id)
	if err != nil {
		return err
	}
	if alive && detail != "" {
		// The monitor runs a VM that is not running (paused, crashed inside).
		m.log.Info("the VM is not running; booting it again", "sandbox", md.Name, "state", detail)
		m.forget(id)
		if err := d.halt(ctx, id); err != nil {
			return err
		}
		alive = false
	}
	if !alive {
		m.forget(id)
		if err := os.WriteFile(filepath.Join(dir, runningFile), nil, 0o600); err != nil {
			return err
		}
		if err := m.resumeOrBoot(ctx, id, md, d); err != nil {
			os.Remove(filepath.Join(dir, runningFile))
			return err
		}
		os.WriteFile(filepath.Join(dir, startedFile), nil, 0o600)
	}
	_, err = m.session(ctx, id, md)
	for attempt := 1; errors.Is(err, errNoTimer) && attempt < bootAttempts; attempt++ {
		m.log.Warn("the VM's kernel went without its timer at boot; booting it again", "sandbox", md.Name, "err", err)
		m.forget(id)
		if err := d.halt(ctx, id); err != nil {
			return err
		}
		if err := d.boot(ctx, id, md); err != nil {
			return err
		}
		_, err = m.session(ctx, id, md)
	}
	return err
}

// bootAttempts is how many times Start boots a VM whose kernel went without its timer
// (errNoTimer), a matter of how busy the host was at one moment of the boot.
const bootAttempts = 3

// session returns the sandbox's session of guest connections, opening it when there
// is none (the daemon started after the VM) or it ended.
func (m *MicroVM) session(ctx context.Context, id backend.ID, md meta) (*yamux.Session, error) {
	m.mu.Lock()
	s := m.sessions[id]
	m.mu.Unlock()
	if s != nil && !s.IsClosed() {
		return s, nil
	}
	s, err := m.vmm(md.VMM).connect(ctx, id)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if old := m.sessions[id]; old != nil && !old.IsClosed() {
		m.mu.Unlock()
		s.Close()
		return old, nil
	}
	m.sessions[id] = s
	m.mu.Unlock()
	// A daemon that started after the VM did. A Firecracker VM's console has its own
	// reader, unless its Firecracker was started before it had one.
	if md.VMM != VMMFirecracker || (&firecrackerVMM{m: m}).writesConsoleFile(id) {
		m.followConsole(id, s.CloseChan())
	}
	return s, nil
}

// forget closes the sandbox's session.
func (m *MicroVM) forget(id backend.ID) {
	m.mu.Lock()
	s := m.sessions[id]
	delete(m.sessions, id)
	m.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// Stop asks the VM's init to end every process, sync and power off, and waits for the
// monitor to end; one that does not is ended. The data disk is kept; a suspended VM's
// saved memory is not (the next Start boots afresh).
func (m *MicroVM) Stop(ctx context.Context, id backend.ID) error {
	md, err := m.readMeta(id)
	if err != nil {
		return nil
	}
	dir := m.sandboxDir(id)
	os.Remove(filepath.Join(dir, runningFile))
	os.Remove(filepath.Join(dir, savedState))
	os.Remove(memFile(filepath.Join(dir, savedState)))
	os.Remove(filepath.Join(dir, resumeNote))
	m.forget(id)
	d := m.vmm(md.VMM)
	alive, _, err := d.status(ctx, id)
	if err != nil || !alive {
		return err
	}
	return m.powerOff(ctx, id, d)
}

// Destroy ends the VM and removes the sandbox's directory, its data disk with it.
func (m *MicroVM) Destroy(ctx context.Context, id backend.ID) error {
	md, err := m.readMeta(id)
	if errors.Is(err, os.ErrNotExist) {
		return os.RemoveAll(m.sandboxDir(id))
	}
	m.forget(id)
	os.Remove(filepath.Join(m.sandboxDir(id), runningFile))
	if err := m.vmm(md.VMM).halt(ctx, id); err != nil {
		return err
	}
	return os.RemoveAll(m.sandboxDir(id))
}

// State reports the VM's state: running, suspended, stopped, created, or an error saying
// why (a monitor that ended without being stopped, a VM that is not running).
func (m *MicroVM) State(ctx context.Context, id backend.ID) (backend.Status, error) {
	md, err := m.readMeta(id)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return backend.Status{State: backend.StateMissing}, nil
		}
		return backend.Status{}, err
	}
	dir := m.sandboxDir(id)
	alive, detail, err := m.vmm(md.VMM).status(ctx, id)
	if err != nil {
		return backend.Status{}, err
	}
	switch {
	case alive && detail == "":
		note, _ := os.ReadFile(filepath.Join(dir, resumeNote))
		return backend.Status{State: backend.StateRunning, Detail: string(note)}, nil
	case alive:
		return backend.Status{State: backend.StateError, Detail: "the VM is " + detail + ": start to boot it again"}, nil
	case exists(filepath.Join(dir, runningFile)):
		why := "the VM's " + md.VMM + " process ended unexpectedly"
		m.consoleWritten(id)
		if last := lastConsoleLine(filepath.Join(dir, consoleLog)); last != "" {
			why += " (its console's last line: " + last + ")"
		}
		return backend.Status{State: backend.StateError, Detail: why + ": start to boot it again"}, nil
	case exists(filepath.Join(dir, savedState)):
		return backend.Status{State: backend.StateSuspended, Detail: "its memory is saved: start resumes it"}, nil
	case exists(filepath.Join(dir, startedFile)):
		return backend.Status{State: backend.StateStopped}, nil
	}
	return backend.Status{State: backend.StateCreated}, nil
}

// Dial opens a new stream of the sandbox's session to the guest.
func (m *MicroVM) Dial(ctx context.Context, id backend.ID) (net.Conn, error) {
	md, err := m.readMeta(id)
	if err != nil {
		return nil, backend.ErrNotFound
	}
	if !exists(filepath.Join(m.sandboxDir(id), runningFile)) {
		return nil, backend.ErrNotRunning
	}
	for attempt := 0; ; attempt++ {
		s, err := m.session(ctx, id, md)
		if err != nil {
			return nil, err
		}
		c, err := s.Open()
		if err == nil {
			return c, nil
		}
		m.forget(id)
		if attempt == 1 {
			return nil, fmt.Errorf("microvm: open a connection to the guest: %w", err)
		}
	}
}

// Limits implements backend.LimitReader: the limits of the sandbox's cgroup inside the
// VM, as its init reads them.
func (m *MicroVM) Limits(ctx context.Context, id backend.ID) (backend.Limits, error) {
	md, err := m.readMeta(id)
	if err != nil {
		return backend.Limits{}, backend.ErrNotFound
	}
	data, err := m.vmm(md.VMM).control(ctx, id, vmspec.ReadLimits)
	if err != nil {
		return backend.Limits{}, err
	}
	var l vmspec.Limits
	if err := json.Unmarshal(data, &l); err != nil {
		return backend.Limits{}, fmt.Errorf("microvm: the VM's limits: %w", err)
	}
	if l.Error != "" {
		return backend.Limits{}, &backend.LimitsNotEnforcedError{Reason: "the VM's cgroup: " + l.Error,
			Fix: "use a kernel with cgroup v2's cpu, memory and pids controllers"}
	}
	return backend.Limits{CPUs: l.CPUs, MemoryBytes: l.MemoryBytes, Pids: l.Pids}, nil
}

// Dir is the backend's own directory.
func (m *MicroVM) Dir() string { return m.dir }

// Close implements backend.Closer: it lets go of the VMs' guest ports and consoles,
// which the next daemon takes; the VMs run on.
func (m *MicroVM) Close() {
	m.mu.Lock()
	for id, s := range m.sessions {
		s.Close()
		delete(m.sessions, id)
	}
	m.mu.Unlock()
	m.stopConsoles()
}
