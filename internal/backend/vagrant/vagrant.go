// Package vagrant runs sandboxes as Vagrant machines, through the vagrant CLI: full VMs
// (VirtualBox, libvirt...) where the agent has sudo, Docker and a whole system. paddock
// generates the Vagrantfile from the [vagrant] settings (or copies the user's template,
// or uses the project's own), asks `vagrant status --machine-readable` how the machine
// is, brings it up, resumes, suspends, halts and destroys it, and reaches the guest over
// SSH as `vagrant ssh-config` describes, with the host key pinned at first contact.
package vagrant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
)

// Name is the backend's registry name.
const Name = "vagrant"

func init() {
	backend.Register(Name, description, func(env backend.Env) (backend.Backend, error) { return New(env) })
}

// description is what the backend is: a whole machine where the agent has sudo, a VM
// with its own kernel on a hypervisor provider; never the default (it provisions a
// whole machine).
var description = backend.Description{Isolation: backend.IsolationVM, OwnKernel: true, Machine: true,
	Tools: []backend.Tool{{Name: "vagrant", Argv: []string{"vagrant", "--version"}}}}

var (
	_ backend.Backend = (*Vagrant)(nil)
)

// Vagrant is the backend.
type Vagrant struct {
	dir      string
	settings Settings
	cli      *cli
	guest    guestOps
	log      *slog.Logger

	mu    sync.Mutex
	cache map[backend.ID]cachedState
	// removals are the machines being destroyed in the background.
	removals sync.WaitGroup
}

// cachedState is a machine's state as last asked, trusted for HealthCheckInterval.
type cachedState struct {
	status backend.Status
	at     time.Time
}

// guestOps bring the guest up in a running machine and connect to it (over SSH); tests
// of the machine's lifecycle replace them.
type guestOps interface {
	ensure(ctx context.Context, id backend.ID, m meta) error
	dial(ctx context.Context, id backend.ID, m meta) (net.Conn, error)
	// forget drops what is kept for a machine (its SSH connection); fresh also forgets
	// its pinned host key, for a machine made anew.
	forget(id backend.ID, fresh bool)
}

// meta is what the backend keeps of a sandbox, in its directory.
type meta struct {
	Name string `json:"name"`
	// Project is the project's directory when its own Vagrantfile is used; empty when
	// the Vagrantfile is paddock's (generated or the user's template, in the sandbox's
	// directory).
	Project string `json:"project,omitempty"`
	// The guest's binary and sha256 keep their JSON names from before the guest was
	// called the guest: the records of existing sandboxes carry them.
	GuestBinary string `json:"agent_binary"`
	GuestSHA256 string `json:"agent_sha256"`
	// Env is the guest's whole environment: backend.BaseEnv, the spec's and [vagrant] env.
	Env []string `json:"env"`
}

// New constructs the backend from the [vagrant] settings.
func New(env backend.Env) (*Vagrant, error) { return newWith(env, cli{bin: "vagrant"}) }

// newWith is New running vagrant as c says (its provider is the settings').
func newWith(env backend.Env, c cli) (*Vagrant, error) {
	s, err := ParseSettings(env.Options)
	if err != nil {
		return nil, err
	}
	c.provider = s.Provider
	v := &Vagrant{dir: env.Dir, settings: s, cli: &c, log: slog.Default().With("backend", Name),
		cache: map[backend.ID]cachedState{}}
	v.guest = &sshGuest{v: v, conns: map[backend.ID]*sshConn{}}
	if env.Dir != "" {
		v.resumeRemovals()
	}
	return v, nil
}

// Name implements backend.Backend.
func (v *Vagrant) Name() string { return Name }

// providerTools are the programs each provider drives, to tell whether it can run here.
var providerTools = map[string]string{"virtualbox": "VBoxManage", "libvirt": "virsh", "docker": "docker", "hyperv": "powershell.exe"}

// provider is the provider machines are made with: the configured one, else Vagrant's
// default as the environment says, else the first of VirtualBox and libvirt installed.
func (v *Vagrant) provider() string {
	if p := v.cli.provider; p != "" {
		return p
	}
	if p := os.Getenv("VAGRANT_DEFAULT_PROVIDER"); p != "" {
		return p
	}
	for _, p := range []string{"virtualbox", "libvirt"} {
		if _, err := exec.LookPath(providerTools[p]); err == nil {
			return p
		}
	}
	return ""
}

// OwnKernel says whether machines are VMs with a kernel of their own: yes unless the
// provider is docker.
func (v *Vagrant) OwnKernel() bool { return v.provider() != "" && v.provider() != "docker" }

// Describe implements backend.Backend: a VM on a hypervisor provider, a container on
// the docker provider.
func (v *Vagrant) Describe() backend.Description {
	d := description
	if !v.OwnKernel() {
		d.Isolation, d.OwnKernel = backend.IsolationContainer, false
	}
	return d
}

// Report implements backend.Reporter: what a machine isolates here, and what it does not.
func (v *Vagrant) Report(ctx context.Context) []backend.Finding {
	p := v.provider()
	kernel := backend.Finding{Topic: "isolation", OK: true,
		Text: fmt.Sprintf("provider %s: each sandbox is a VM with its own kernel; the agent has sudo inside it", p)}
	if !v.OwnKernel() {
		kernel = backend.Finding{Topic: "isolation", OK: false,
			Text: "provider docker: each sandbox is a container under the host's kernel, where the agent has sudo (root in the container): weaker than the docker backend",
			Fix:  "use a hypervisor provider (VirtualBox, libvirt) for a VM, or the docker backend"}
	}
	return []backend.Finding{kernel, {Topic: "network", OK: false,
		Text: "the machine's own network: with sudo the agent can go around the allowlist proxy (the model key still stays on the host)"}}
}

// Available says whether the vagrant command is installed, and a provider it can use.
func (v *Vagrant) Available(ctx context.Context) error {
	if _, err := exec.LookPath(v.cli.bin); err != nil {
		return &backend.UnavailableError{Backend: Name, Reason: "the vagrant command is not installed",
			Fix: "sudo apt-get install vagrant (and a provider: VirtualBox, libvirt, or Docker with provider = \"docker\" in [vagrant])"}
	}
	provider := v.cli.provider
	if provider == "" {
		provider = os.Getenv("VAGRANT_DEFAULT_PROVIDER")
	}
	if provider == "" {
		for _, p := range []string{"virtualbox", "libvirt"} {
			if _, err := exec.LookPath(providerTools[p]); err == nil {
				return nil
			}
		}
		return &backend.UnavailableError{Backend: Name, Reason: "no Vagrant provider is installed (neither VirtualBox's VBoxManage nor libvirt's virsh)",
			Fix: "install VirtualBox or vagrant-libvirt, or set provider = \"docker\" in [vagrant] to run machines as containers"}
	}
	if tool, ok := providerTools[provider]; ok {
		if _, err := exec.LookPath(tool); err != nil {
			return &backend.UnavailableError{Backend: Name, Reason: fmt.Sprintf("the %s provider needs %s, which is not installed", provider, tool),
				Fix: fmt.Sprintf("install %s, or choose another provider in [vagrant]", tool)}
		}
	}
	return nil
}

func (v *Vagrant) sandboxDir(id backend.ID) string { return filepath.Join(v.dir, string(id)) }

func (v *Vagrant) readMeta(id backend.ID) (meta, error) {
	var m meta
	data, err := os.ReadFile(filepath.Join(v.sandboxDir(id), "sandbox.json"))
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(data, &m)
}

// machine is where vagrant runs for a sandbox: the project with its own Vagrantfile
// keeps its machine's state in its own .vagrant, where the user's vagrant commands see it.
func (v *Vagrant) machine(id backend.ID, m meta) machineDir { return machineIn(v.sandboxDir(id), m) }

// machineIn is where vagrant runs for a sandbox whose directory is dir.
func machineIn(dir string, m meta) machineDir {
	if m.Project != "" {
		dir = m.Project
	}
	return machineDir{cwd: dir, dotfile: filepath.Join(dir, ".vagrant")}
}

// Create writes the sandbox's Vagrantfile (unless its project has one) and what the
// backend keeps of it; nothing is started.
func (v *Vagrant) Create(ctx context.Context, spec backend.Spec) error {
	dir := v.sandboxDir(spec.ID)
	if _, err := v.readMeta(spec.ID); err == nil {
		return nil
	}
	m := meta{Name: spec.Name, GuestBinary: spec.GuestBinary, GuestSHA256: spec.GuestSHA256,
		Env: append(backend.BaseEnv(spec), spec.Env...)}
	for _, k := range sortedKeys(v.settings.Env) {
		m.Env = append(m.Env, k+"="+v.settings.Env[k])
	}
	var vagrantfile []byte
	switch {
	case v.settings.Vagrantfile != "":
		data, err := os.ReadFile(v.settings.Vagrantfile)
		if err != nil {
			return fmt.Errorf("vagrant: the vagrantfile template: %w", err)
		}
		vagrantfile = append(data, []byte(templateGuard)...)
	case v.settings.ProjectVagrantfile && spec.Source != "" && exists(filepath.Join(spec.Source, "Vagrantfile")):
		if other := v.usedBy(spec.Source); other != "" {
			return fmt.Errorf("vagrant: the Vagrantfile of %s makes one machine, which sandbox %s uses already", spec.Source, other)
		}
		m.Project = spec.Source
		v.log.Warn("using the project's own Vagrantfile, left as it is: paddock provisions none of it (packages, npm packages, the user agent are set up at start as far as sudo allows)",
			"project", spec.Source)
	default:
		vagrantfile = []byte(Generate(v.settings, Machine{Name: spec.Name, NPM: spec.NPM}))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if vagrantfile != nil {
		if err := os.MkdirAll(filepath.Join(dir, "share"), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "Vagrantfile"), vagrantfile, 0o600); err != nil {
			return err
		}
	}
	data, _ := json.MarshalIndent(m, "", "  ")
	tmp := filepath.Join(dir, "sandbox.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "sandbox.json"))
}

// templateGuard follows a user's template: Vagrant shares the Vagrantfile's directory at
// /vagrant unless told otherwise, and vagrant runs that file on the host, so a VM able to
// write it could run code on the host at the next vagrant command.
const templateGuard = `
# Added by paddock: the VM must not be able to write this file, which vagrant runs on the host.
Vagrant.configure('2') do |config|
  config.vm.synced_folder '.', '/vagrant', disabled: true
end
`

// usedBy names the sandbox that uses the project's own Vagrantfile already, if any.
func (v *Vagrant) usedBy(project string) string {
	entries, _ := os.ReadDir(v.dir)
	for _, e := range entries {
		if e.Name() == removedDir {
			continue
		}
		if m, err := v.readMeta(backend.ID(e.Name())); err == nil && m.Project == project {
			return m.Name
		}
	}
	return ""
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// status asks vagrant how the machine is, now.
func (v *Vagrant) status(ctx context.Context, id backend.ID, m meta) (machineState, error) {
	out, err := v.cli.run(ctx, v.machine(id, m), "status", "--machine-readable")
	if err != nil {
		return machineState{}, err
	}
	return parseStatus(out)
}

// Start brings the machine to running from whatever state it is in, then the guest
// inside: running, nothing; saved (suspended), vagrant resume; powered off, stopped,
// crashed (aborted) or never made, vagrant up.
func (v *Vagrant) Start(ctx context.Context, id backend.ID) error {
	m, err := v.readMeta(id)
	if err != nil {
		return backend.ErrNotFound
	}
	defer v.invalidate(id)
	st := machineState{State: "not_created"}
	if m.Project != "" || exists(filepath.Join(v.sandboxDir(id), "made")) {
		// A machine paddock never brought up is not made yet: no need to ask (a second).
		if st, err = v.status(ctx, id, m); err != nil {
			return err
		}
	}
	dir := v.machine(id, m)
	switch st.State {
	case "running":
	case "saved":
		if _, err := v.cli.run(ctx, dir, "resume"); err != nil {
			return err
		}
	case "not_created":
		v.guest.forget(id, true) // a new machine has a new host key
		if err := v.up(ctx, dir, m.Name); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(v.sandboxDir(id), "made"), nil, 0o600); err != nil {
			return err
		}
	default: // poweroff, stopped, shutoff, aborted, ...
		v.guest.forget(id, false)
		if _, err := v.cli.run(ctx, dir, "up"); err != nil {
			return err
		}
	}
	return v.guest.ensure(ctx, id, m)
}

// up brings a new machine up. Before it makes its container, vagrant's docker provider
// inspects every container on the engine, one `docker inspect` each, to find the ports
// they hold; a container someone else removes between its listing and its inspect fails
// the up with "No such object", before anything of this machine is made. On an engine
// where other sandboxes come and go that happens often enough that one more try is not
// enough (seen in whole test runs), so up is tried up to upTries times, a moment apart.
func (v *Vagrant) up(ctx context.Context, dir machineDir, name string) error {
	var err error
	for try := 1; ; try++ {
		_, err = v.cli.run(ctx, dir, "up")
		if err == nil || !strings.Contains(err.Error(), "No such object") || try == upTries || ctx.Err() != nil {
			break
		}
		v.log.Warn("vagrant up failed on a container removed while it looked at every container's ports; bringing the machine up again",
			"sandbox", name, "try", try, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(try) * upPause):
		}
	}
	return err
}

// upTries and upPause bound up's retries of the docker provider's race with other
// containers' removal.
const (
	upTries = 5
	upPause = 500 * time.Millisecond
)

// Stop suspends the machine (auto_suspend), or halts it; a provider that cannot suspend
// (docker) halts.
func (v *Vagrant) Stop(ctx context.Context, id backend.ID) error {
	m, err := v.readMeta(id)
	if err != nil {
		return nil
	}
	defer v.invalidate(id)
	v.guest.forget(id, false)
	st, err := v.status(ctx, id, m)
	if err != nil {
		return err
	}
	if st.State != "running" {
		return nil
	}
	dir := v.machine(id, m)
	if v.settings.AutoSuspend {
		_, err := v.cli.run(ctx, dir, "suspend")
		if err == nil {
			return nil
		}
		v.log.Info("suspend failed; halting instead", "sandbox", m.Name, "err", err)
	}
	_, err = v.cli.run(ctx, dir, "halt")
	return err
}

// Destroy removes the sandbox: its directory is moved aside at once, and the machine is
// destroyed in the background (a VM takes seconds to go), its directory removed after. A
// machine of the project's own Vagrantfile is only halted unless auto_destroy. A failure
// of vagrant is logged and never keeps the sandbox's record; removals cut short by the
// daemon's end are finished by the next one.
func (v *Vagrant) Destroy(ctx context.Context, id backend.ID) error {
	m, err := v.readMeta(id)
	if errors.Is(err, os.ErrNotExist) {
		return os.RemoveAll(v.sandboxDir(id))
	}
	defer v.invalidate(id)
	v.guest.forget(id, true)
	aside := filepath.Join(v.dir, removedDir, string(id))
	if err := os.MkdirAll(filepath.Dir(aside), 0o700); err != nil {
		return err
	}
	os.RemoveAll(aside)
	if err := os.Rename(v.sandboxDir(id), aside); err != nil {
		return err
	}
	v.removals.Add(1)
	go v.finishRemoval(aside, m)
	return nil
}

// removedDir holds, under the backend's directory, the directories of sandboxes whose
// machines are being destroyed.
const removedDir = ".removed"

// finishRemoval destroys (or halts) a removed sandbox's machine and removes its directory.
func (v *Vagrant) finishRemoval(dir string, m meta) {
	defer v.removals.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	md := machineIn(dir, m)
	if m.Project != "" && !v.settings.AutoDestroy {
		if _, err := v.cli.run(ctx, md, "halt"); err != nil {
			v.log.Warn("halting the project's machine failed", "sandbox", m.Name, "err", err)
		}
		v.log.Info("the project's own machine is kept (auto_destroy is off)", "sandbox", m.Name, "project", m.Project)
	} else if _, err := v.cli.run(ctx, md, "destroy", "-f"); err != nil {
		v.log.Warn("vagrant destroy failed: the machine may be left behind", "sandbox", m.Name, "dir", dir, "err", err)
		return // kept aside: the next daemon tries again
	}
	os.RemoveAll(dir)
	os.Remove(filepath.Dir(dir)) // when it was the last
}

// resumeRemovals finishes the removals the last daemon left.
func (v *Vagrant) resumeRemovals() {
	entries, _ := os.ReadDir(filepath.Join(v.dir, removedDir))
	for _, e := range entries {
		dir := filepath.Join(v.dir, removedDir, e.Name())
		var m meta
		data, err := os.ReadFile(filepath.Join(dir, "sandbox.json"))
		if err != nil || json.Unmarshal(data, &m) != nil {
			os.RemoveAll(dir)
			continue
		}
		v.removals.Add(1)
		go v.finishRemoval(dir, m)
	}
}

// WaitRemovals waits until the machines of removed sandboxes are destroyed.
func (v *Vagrant) WaitRemovals() { v.removals.Wait() }

// Close waits, up to two minutes, for the machines being destroyed, so that a daemon
// stopping does not leave them half gone (what is left is finished at the next start).
func (v *Vagrant) Close() {
	done := make(chan struct{})
	go func() { v.removals.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		v.log.Warn("stopping with machines still being destroyed: the next start finishes them")
	}
}

// State reports the machine's state, as vagrant last said it within
// health_check_interval, in words the user can act on.
func (v *Vagrant) State(ctx context.Context, id backend.ID) (backend.Status, error) {
	m, err := v.readMeta(id)
	if err != nil {
		return backend.Status{State: backend.StateMissing}, nil
	}
	v.mu.Lock()
	c, ok := v.cache[id]
	v.mu.Unlock()
	if ok && time.Since(c.at) < time.Duration(v.settings.HealthCheckInterval)*time.Second {
		return c.status, nil
	}
	var s backend.Status
	st, err := v.status(ctx, id, m)
	if err != nil {
		if ctx.Err() != nil {
			return backend.Status{}, ctx.Err()
		}
		s = backend.Status{State: backend.StateError, Detail: "VM status unknown: restart to retry (" + err.Error() + ")"}
	} else {
		s = statusOf(st.State)
		if st.State == "not_created" && !exists(filepath.Join(v.sandboxDir(id), "made")) {
			s = backend.Status{State: backend.StateCreated} // created, never brought up
		}
	}
	v.mu.Lock()
	v.cache[id] = cachedState{status: s, at: time.Now()}
	v.mu.Unlock()
	return s, nil
}

// statusOf maps a Vagrant machine state onto the backend's, with what the user must know.
func statusOf(state string) backend.Status {
	switch state {
	case "running":
		return backend.Status{State: backend.StateRunning}
	case "saved":
		return backend.Status{State: backend.StateStopped, Detail: "VM suspended: start or restart resumes it"}
	case "poweroff", "stopped", "shutoff":
		return backend.Status{State: backend.StateStopped, Detail: "VM powered off"}
	case "aborted":
		return backend.Status{State: backend.StateError, Detail: "VM crashed: restart to recover"}
	case "not_created":
		return backend.Status{State: backend.StateMissing, Detail: "VM destroyed"}
	}
	return backend.Status{State: backend.StateError, Detail: fmt.Sprintf("VM status unknown (%s): restart to retry", state)}
}

func (v *Vagrant) invalidate(id backend.ID) {
	v.mu.Lock()
	delete(v.cache, id)
	v.mu.Unlock()
}

// Dial opens a stream to the guest over the machine's SSH connection.
func (v *Vagrant) Dial(ctx context.Context, id backend.ID) (net.Conn, error) {
	m, err := v.readMeta(id)
	if err != nil {
		return nil, backend.ErrNotFound
	}
	c, err := v.guest.dial(ctx, id, m)
	if err != nil {
		v.invalidate(id) // the next State asks vagrant again
		return nil, err
	}
	return c, nil
}
