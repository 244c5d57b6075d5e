package vagrant

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/shell"
)

// stubGuest records what the backend asks of the guest in a fake machine, which has none.
type stubGuest struct {
	mu    sync.Mutex
	calls []string
}

func (g *stubGuest) record(s string) { g.mu.Lock(); g.calls = append(g.calls, s); g.mu.Unlock() }
func (g *stubGuest) ensure(context.Context, backend.ID, meta) error {
	g.record("ensure")
	return nil
}
func (g *stubGuest) dial(context.Context, backend.ID, meta) (net.Conn, error) {
	g.record("dial")
	return nil, errors.New("a fake machine has no guest")
}
func (g *stubGuest) forget(_ backend.ID, fresh bool) { g.record(fmt.Sprintf("forget fresh=%v", fresh)) }

// call is one run of the fake vagrant.
type call struct {
	Cwd, Dotfile, Provider, Checkpoint string
	Args                               []string
}

// fake is a backend whose vagrant is the fake one (this test binary, fake_vagrant_test.go).
type fake struct {
	*Vagrant
	t     *testing.T
	guest *stubGuest
	log   string
	// failFile holds the subcommand the fake vagrant fails (fail).
	failFile string
}

func newFake(t *testing.T, opts map[string]any) *fake {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "vagrant")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log, fail := filepath.Join(dir, "calls"), filepath.Join(dir, "fail")
	v, err := newWith(backend.Env{Dir: t.TempDir(), Options: opts}, cli{bin: bin, env: []string{"FAKE_VAGRANT_LOG=" + log, "FAKE_VAGRANT_FAIL=" + fail}})
	if err != nil {
		t.Fatal(err)
	}
	g := &stubGuest{}
	v.guest = g
	return &fake{Vagrant: v, t: t, guest: g, log: log, failFile: fail}
}

// fail makes the fake vagrant's subcommand sub fail from now on ("": none).
func (f *fake) fail(sub string) {
	f.t.Helper()
	if err := os.WriteFile(f.failFile, []byte(sub), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// calls returns the fake vagrant's calls since the last time, as "subcommand args".
func (f *fake) calls() []call {
	f.t.Helper()
	file, err := os.Open(f.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	defer file.Close()
	var out []call
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		var c call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, c)
	}
	os.Remove(f.log)
	return out
}

// commands are the subcommands of calls, joined.
func commands(cs []call) string {
	var s []string
	for _, c := range cs {
		s = append(s, strings.Join(c.Args, " "))
	}
	return strings.Join(s, "; ")
}

// setState makes the fake machine be in state, as if VirtualBox had put it there.
func (f *fake) setState(id backend.ID, state string) {
	f.t.Helper()
	dot := filepath.Join(f.sandboxDir(id), ".vagrant")
	os.MkdirAll(dot, 0o755)
	if err := os.WriteFile(filepath.Join(dot, "fake-state"), []byte(state), 0o644); err != nil {
		f.t.Fatal(err)
	}
	f.invalidate(id)
}

func (f *fake) create(id backend.ID, spec backend.Spec) {
	f.t.Helper()
	spec.ID, spec.Name = id, "sb-"+string(id)
	if err := f.Create(context.Background(), spec); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fake) state(id backend.ID) backend.Status {
	f.t.Helper()
	st, err := f.State(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

// TestRecoveryByState: Start brings a machine back from each state Vagrant reports, with
// the command that state needs, then the guest; and State says what the user must know.
func TestRecoveryByState(t *testing.T) {
	t.Parallel()
	f := newFake(t, map[string]any{"health_check_interval": 60})
	ctx := context.Background()
	id := backend.ID("rec1")
	f.create(id, backend.Spec{})
	if st := f.state(id); st.State != backend.StateCreated {
		t.Fatalf("a machine never brought up: %+v", st)
	}
	f.calls()
	for _, c := range []struct {
		from    string
		status  backend.Status
		command string // what Start runs after status
		guest   string
	}{
		{"not_created", backend.Status{State: backend.StateCreated}, "!up", "forget fresh=true ensure"},
		{"running", backend.Status{State: backend.StateRunning}, "", "ensure"},
		{"saved", backend.Status{State: backend.StateStopped, Detail: "VM suspended: start or restart resumes it"}, "resume", "ensure"},
		{"poweroff", backend.Status{State: backend.StateStopped, Detail: "VM powered off"}, "up", "forget fresh=false ensure"},
		{"aborted", backend.Status{State: backend.StateError, Detail: "VM crashed: restart to recover"}, "up", "forget fresh=false ensure"},
		{"gurumeditation", backend.Status{State: backend.StateError, Detail: "VM status unknown (gurumeditation): restart to retry"}, "up", "forget fresh=false ensure"},
		{"not_created", backend.Status{State: backend.StateMissing, Detail: "VM destroyed"}, "up", "forget fresh=true ensure"},
	} {
		f.setState(id, c.from)
		if st := f.state(id); st != c.status {
			t.Errorf("%s: State = %+v, want %+v", c.from, st, c.status)
		}
		f.calls()
		f.guest.calls = nil
		if err := f.Start(ctx, id); err != nil {
			t.Fatalf("Start from %s: %v", c.from, err)
		}
		want := "status --machine-readable"
		switch {
		case strings.HasPrefix(c.command, "!"): // never made: Start does not ask
			want = c.command[1:]
		case c.command != "":
			want += "; " + c.command
		}
		if got := commands(f.calls()); got != want {
			t.Errorf("Start from %s ran %q, want %q", c.from, got, want)
		}
		if got := strings.Join(f.guest.calls, " "); got != c.guest {
			t.Errorf("Start from %s asked the guest %q, want %q", c.from, got, c.guest)
		}
		if st := f.state(id); st.State != backend.StateRunning {
			t.Errorf("after Start from %s: %+v", c.from, st)
		}
	}

	// A machine that fails to boot: Start says what vagrant said.
	f.setState(id, "aborted")
	f.fail("up")
	if err := f.Start(ctx, id); err == nil || !strings.Contains(err.Error(), "invalid state while waiting for it") {
		t.Errorf("Start of a machine failing to boot: %v", err)
	}
	// vagrant itself failing: the state is unknown, and says how to retry.
	f.fail("status")
	f.invalidate(id)
	if st := f.state(id); st.State != backend.StateError || !strings.HasPrefix(st.Detail, "VM status unknown: restart to retry") {
		t.Errorf("vagrant status failing: %+v", st)
	}
}

// TestUpLosesItsContainer: the docker provider's up of a new machine failing because a
// container it listed was gone when it inspected it ("No such object", another sandbox
// removed meanwhile) is tried again, up to five times in all, and then fails saying why.
func TestUpLosesItsContainer(t *testing.T) {
	t.Parallel()
	f := newFake(t, map[string]any{"health_check_interval": 60})
	id := backend.ID("lost1")
	f.create(id, backend.Spec{})
	f.calls()
	f.fail("lose 4 up")
	if err := f.Start(context.Background(), id); err != nil {
		t.Fatalf("Start after four ups that lost a container: %v", err)
	}
	if got := commands(f.calls()); got != "up; up; up; up; up" {
		t.Errorf("Start ran %q, want up five times", got)
	}
	if st := f.state(id); st.State != backend.StateRunning {
		t.Errorf("after Start: %+v", st)
	}

	f.create("lost2", backend.Spec{})
	f.calls()
	f.fail("lose 5 up")
	err := f.Start(context.Background(), "lost2")
	if err == nil || !strings.Contains(err.Error(), "No such object") {
		t.Fatalf("Start after five ups that lost a container: %v, want the provider's error", err)
	}
	if got := commands(f.calls()); got != "up; up; up; up; up" {
		t.Errorf("Start ran %q, want up five times and no more", got)
	}
}

// TestStopAndDestroy: stop suspends (halting when the provider cannot suspend, or without
// auto_suspend); rm destroys a machine paddock made even when vagrant fails (the record
// goes), and only halts one of the project's own Vagrantfile unless auto_destroy.
func TestStopAndDestroy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{}, "status --machine-readable; suspend"},
		{map[string]any{"provider": "docker"}, "status --machine-readable; suspend; halt"},
		{map[string]any{"auto_suspend": false}, "status --machine-readable; halt"},
	} {
		f := newFake(t, c.opts)
		f.create("st1", backend.Spec{})
		f.setState("st1", "running")
		f.calls()
		if err := f.Stop(ctx, "st1"); err != nil {
			t.Fatalf("%v: Stop: %v", c.opts, err)
		}
		if got := commands(f.calls()); got != c.want {
			t.Errorf("%v: Stop ran %q, want %q", c.opts, got, c.want)
		}
		if err := f.Stop(ctx, "st1"); err != nil || commands(f.calls()) != "status --machine-readable" {
			t.Errorf("Stop of a stopped machine did more than look")
		}
	}

	f := newFake(t, nil)
	f.create("de1", backend.Spec{})
	f.setState("de1", "running")
	f.calls()
	f.fail("destroy")
	if err := f.Destroy(ctx, "de1"); err != nil {
		t.Fatalf("Destroy with vagrant failing: %v", err)
	}
	if exists(f.sandboxDir("de1")) {
		t.Error("the sandbox's directory outlived Destroy")
	}
	if st := f.state("de1"); st.State != backend.StateMissing {
		t.Errorf("after Destroy: %+v", st)
	}
	f.WaitRemovals()
	if got := commands(f.calls()); got != "destroy -f" {
		t.Errorf("Destroy ran %q", got)
	}
	// The failed destroy is kept aside; the next daemon (a new backend) finishes it.
	f.fail("")
	again, err := newWith(backend.Env{Dir: f.dir, Options: nil}, *f.cli)
	if err != nil {
		t.Fatal(err)
	}
	again.WaitRemovals()
	if got := commands(f.calls()); got != "destroy -f" {
		t.Errorf("the next daemon ran %q for the removal left", got)
	}
	if entries, _ := os.ReadDir(f.dir); len(entries) != 0 {
		t.Errorf("left in the backend's directory: %v", entries)
	}

	project := t.TempDir()
	own := "Vagrant.configure('2') { |c| c.vm.box = 'mine' } # the user's own\n"
	os.WriteFile(filepath.Join(project, "Vagrantfile"), []byte(own), 0o644)
	for _, autoDestroy := range []bool{false, true} {
		f := newFake(t, map[string]any{"auto_destroy": autoDestroy, "project_vagrantfile": true})
		f.create("pr1", backend.Spec{Source: project})
		f.setState("pr1", "running")
		os.MkdirAll(filepath.Join(project, ".vagrant"), 0o755)
		os.WriteFile(filepath.Join(project, ".vagrant", "fake-state"), []byte("running"), 0o644)
		f.calls()
		if err := f.Destroy(ctx, "pr1"); err != nil {
			t.Fatal(err)
		}
		f.WaitRemovals()
		cs := f.calls()
		want := "halt"
		if autoDestroy {
			want = "destroy -f"
		}
		if got := commands(cs); got != want || cs[0].Cwd != project || cs[0].Dotfile != filepath.Join(project, ".vagrant") {
			t.Errorf("auto_destroy %v: Destroy ran %q in %s (%s), want %q in the project", autoDestroy, got, cs[0].Cwd, cs[0].Dotfile, want)
		}
		if data, _ := os.ReadFile(filepath.Join(project, "Vagrantfile")); string(data) != own {
			t.Errorf("the project's Vagrantfile changed: %q", data)
		}
	}
}

// TestWhichVagrantfile: a generated file in the sandbox's own directory; the user's
// template copied as it is; the project's own (when project_vagrantfile says so) used
// where it is, never written, and by one sandbox at a time. Every call runs in the right directory, with checkpoint
// requests off and the configured provider.
func TestWhichVagrantfile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFake(t, map[string]any{"provider": "libvirt", "box": "debian/bookworm64"})
	f.create("ge1", backend.Spec{NPM: []string{"@anthropic-ai/claude-code@2.1.330"}})
	gen, err := os.ReadFile(filepath.Join(f.sandboxDir("ge1"), "Vagrantfile"))
	if err != nil || !strings.Contains(string(gen), "config.vm.box = 'debian/bookworm64'") || !strings.Contains(string(gen), "npm install -g @anthropic-ai/claude-code@2.1.330") {
		t.Errorf("generated Vagrantfile: %v\n%s", err, gen)
	}
	f.Start(ctx, "ge1")
	for _, c := range f.calls() {
		if c.Cwd != f.sandboxDir("ge1") || c.Dotfile != filepath.Join(f.sandboxDir("ge1"), ".vagrant") || c.Provider != "libvirt" || c.Checkpoint != "1" {
			t.Errorf("a call ran as %+v", c)
		}
	}

	tmpl := filepath.Join(t.TempDir(), "Vagrantfile.tmpl")
	os.WriteFile(tmpl, []byte("# mine\nVagrant.configure('2') { |c| c.vm.box = 'x' }\n"), 0o644)
	f = newFake(t, map[string]any{"vagrantfile": tmpl})
	f.create("te1", backend.Spec{})
	if got, _ := os.ReadFile(filepath.Join(f.sandboxDir("te1"), "Vagrantfile")); string(got) != "# mine\nVagrant.configure('2') { |c| c.vm.box = 'x' }\n"+templateGuard {
		t.Errorf("the template was not copied as it is, with the guard after it: %q", got)
	}

	// Without project_vagrantfile, a project's own is left alone and paddock's is used:
	// the project's usually shares the host's checkout with the VM.
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "Vagrantfile"), []byte("# the project's\n"), 0o644)
	f = newFake(t, nil)
	f.create("pn1", backend.Spec{Source: project})
	if !exists(filepath.Join(f.sandboxDir("pn1"), "Vagrantfile")) {
		t.Error("without project_vagrantfile, the project's Vagrantfile was used")
	}
	f = newFake(t, map[string]any{"project_vagrantfile": true})
	f.create("pj1", backend.Spec{Source: project})
	if exists(filepath.Join(f.sandboxDir("pj1"), "Vagrantfile")) {
		t.Error("paddock wrote a Vagrantfile beside the project's own")
	}
	f.Start(ctx, "pj1")
	for _, c := range f.calls() {
		if c.Cwd != project {
			t.Errorf("a call for the project's machine ran in %s", c.Cwd)
		}
	}
	if err := f.Create(ctx, backend.Spec{ID: "pj2", Name: "other", Source: project}); err == nil || !strings.Contains(err.Error(), "sandbox sb-pj1 uses already") {
		t.Errorf("a second sandbox on the project's one machine: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(project, "Vagrantfile")); string(data) != "# the project's\n" {
		t.Errorf("the project's Vagrantfile changed: %q", data)
	}
}

// TestHealthIsCached: State asks vagrant at most once per health_check_interval; a
// lifecycle call or a failed dial makes the next State ask again.
func TestHealthIsCached(t *testing.T) {
	t.Parallel()
	f := newFake(t, map[string]any{"health_check_interval": 1})
	ctx := context.Background()
	f.create("hc1", backend.Spec{})
	f.setState("hc1", "running")
	f.calls()
	for range 5 {
		f.state("hc1")
	}
	if got := commands(f.calls()); got != "status --machine-readable" {
		t.Errorf("5 States within the interval ran %q", got)
	}
	os.WriteFile(filepath.Join(f.sandboxDir("hc1"), ".vagrant", "fake-state"), []byte("aborted"), 0o644)
	if st := f.state("hc1"); st.State != backend.StateRunning {
		t.Errorf("a cached state was not used: %+v", st)
	}
	time.Sleep(1100 * time.Millisecond)
	if st := f.state("hc1"); st.Detail != "VM crashed: restart to recover" {
		t.Errorf("after the interval: %+v", st)
	}
	f.setState("hc1", "running")
	f.state("hc1")
	f.calls()
	if _, err := f.Dial(ctx, "hc1"); err == nil {
		t.Fatal("dial of a fake machine succeeded")
	}
	f.state("hc1")
	if got := commands(f.calls()); got != "status --machine-readable" {
		t.Errorf("after a failed dial, State ran %q", got)
	}
}

// TestSettings: the defaults the issue names, overrides, and refusals of what cannot
// work, before anything runs.
func TestSettings(t *testing.T) {
	t.Parallel()
	s, err := ParseSettings(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.MemoryMB != 4096 || s.CPUs != 2 || s.Box != "bento/ubuntu-24.04" || !s.AutoSuspend || s.AutoDestroy || s.HostGatewayIP != "10.0.2.2" ||
		s.SyncedFolderType != "virtualbox" || !slices.Equal(s.ProvisionPackages, DefaultPackages) || s.HealthCheckInterval != 60 {
		t.Errorf("defaults: %+v", s)
	}
	s, err = ParseSettings(map[string]any{"memory_mb": 8192, "auto_suspend": false, "provision_packages": []any{"git", "ripgrep"},
		"port_forwards": []any{map[string]any{"guest": 3000, "host": 13000}}, "env": map[string]any{"FOO": "bar"}})
	if err != nil || s.MemoryMB != 8192 || s.AutoSuspend || !slices.Equal(s.ProvisionPackages, []string{"git", "ripgrep"}) ||
		len(s.PortForwards) != 1 || s.PortForwards[0].Host != 13000 || s.Env["FOO"] != "bar" || s.CPUs != 2 {
		t.Errorf("overrides: %+v %v", s, err)
	}
	for _, c := range []struct {
		opts map[string]any
		want string
	}{
		{map[string]any{"memroy_mb": 1}, `unknown setting "memroy_mb"`},
		{map[string]any{"memory_mb": 10}, "memory_mb is at least 256"},
		{map[string]any{"provision_packages": []any{"git; rm -rf /"}}, "is not a package name"},
		{map[string]any{"npm_packages": []any{"$(curl evil)"}}, "is not a package name"},
		{map[string]any{"provision_script": "setup.sh"}, "provision_script must be an absolute path"},
		{map[string]any{"port_forwards": []any{map[string]any{"guest": 0, "host": 1}}}, "ports are 1 to 65535"},
		{map[string]any{"port_forwards": []any{map[string]any{"guest": 1, "host": 1, "protocol": "sctp"}}}, "protocol is tcp or udp"},
		{map[string]any{"env": map[string]any{"A-B": "x"}}, "is not a variable name"},
		{map[string]any{"health_check_interval": 0}, "health_check_interval is at least 1"},
	} {
		if _, err := ParseSettings(c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.opts, err, c.want)
		}
	}
}

// TestGeneratedVagrantfile: what a generated file holds, and that the real vagrant
// validates it (every provider left aside), quotes and all.
func TestGeneratedVagrantfile(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "it's setup.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755)
	s, err := ParseSettings(map[string]any{"box": "bento/ubuntu-24.04", "provision_script": script, "npm_packages": []any{"typescript@5"},
		"port_forwards": []any{map[string]any{"guest": 8080, "host": 18080, "protocol": "udp"}}, "provision_packages": []any{"curl"}})
	if err != nil {
		t.Fatal(err)
	}
	vf := Generate(s, Machine{Name: "my-box", NPM: []string{"@openai/codex@0.169.0"}})
	for _, want := range []string{
		"config.vm.box = 'bento/ubuntu-24.04'", "config.vm.hostname = 'my-box'", "vb.memory = 4096", "vb.cpus = 2",
		"'--audio', 'none'", "'--usb', 'off'", "forwarded_port', guest: 8080, host: 18080, protocol: 'udp', host_ip: '127.0.0.1'",
		"apt-get install -y -q curl git tmux sudo", "npm install -g @openai/codex@0.169.0 typescript@5",
		"useradd -m -s /bin/bash agent", "NOPASSWD:ALL", `path: '` + strings.ReplaceAll(script, "'", `\'`) + `'`,
		"config.vm.synced_folder 'share', '/vagrant', type: 'virtualbox'",
		"'--clipboard-mode', 'disabled', '--draganddrop', 'disabled'",
	} {
		if !strings.Contains(vf, want) {
			t.Errorf("the Vagrantfile lacks %q:\n%s", want, vf)
		}
	}
	// The directory holding the Vagrantfile, which vagrant runs on the host, is never
	// shared with the VM: a VM writing it would run code on the host.
	if strings.Contains(vf, "synced_folder '.'") || strings.Contains(vf, `synced_folder "."`) {
		t.Errorf("the Vagrantfile shares its own directory:\n%s", vf)
	}
	if _, err := exec.LookPath("vagrant"); err != nil {
		t.Skip("vagrant is not installed: apt-get install vagrant")
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "share"), 0o755)
	os.WriteFile(filepath.Join(dir, "Vagrantfile"), []byte(vf), 0o644)
	cmd := exec.Command("vagrant", "validate", "--ignore-provider")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VAGRANT_CHECKPOINT_DISABLE=1", "VAGRANT_DOTFILE_PATH="+filepath.Join(dir, ".vagrant"))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "validated successfully") {
		t.Fatalf("vagrant validate: %v\n%s\n%s", err, out, vf)
	}
}

// TestGuestEnvQuoting: the guest's environment survives the shell that starts it,
// whatever the values hold.
func TestGuestEnvQuoting(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"plain", "it's", `a "b" $c ` + "`d`", "new\nline", `back\slash`, ""} {
		out, err := exec.Command("sh", "-c", "env -i "+shell.Quote("V="+v)+" sh -c 'printf %s \"$V\"'").Output()
		if err != nil || string(out) != v {
			t.Errorf("%q came out as %q (%v)", v, out, err)
		}
	}
}

// TestAvailable: vagrant alone is not enough; a provider it can drive must be there too,
// and doctor says how to get one.
func TestAvailable(t *testing.T) {
	f := newFake(t, nil)
	// vagrant and its providers are found on PATH, this process's, as paddock finds them:
	// so this test stays serial.
	bin := filepath.Dir(f.cli.bin)
	f.cli.bin = "vagrant"
	t.Setenv("PATH", bin) // the fake vagrant, and nothing else
	t.Setenv("VAGRANT_DEFAULT_PROVIDER", "")
	var ue *backend.UnavailableError
	if err := f.Available(context.Background()); !errors.As(err, &ue) || !strings.Contains(ue.Reason, "no Vagrant provider") || !strings.Contains(ue.Fix, `provider = "docker"`) {
		t.Errorf("no provider: %v", err)
	}
	d := newFake(t, map[string]any{"provider": "docker"})
	d.cli.bin = "vagrant"
	if err := d.Available(context.Background()); !errors.As(err, &ue) || !strings.Contains(ue.Reason, "needs docker") {
		t.Errorf("docker provider without docker: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if err := f.Available(context.Background()); !errors.As(err, &ue) || !strings.Contains(ue.Fix, "apt-get install vagrant") {
		t.Errorf("no vagrant: %v", err)
	}
}

// TestIsolationReport: a hypervisor provider makes VMs ("Just do it" prefers them); the
// docker provider makes containers with sudo inside, and doctor says it is weaker; both
// say the machine's network is its own.
func TestIsolationReport(t *testing.T) {
	t.Parallel()
	vm := newFake(t, map[string]any{"provider": "virtualbox"})
	if !vm.OwnKernel() {
		t.Error("a VirtualBox machine has no kernel of its own")
	}
	ct := newFake(t, map[string]any{"provider": "docker"})
	if ct.OwnKernel() {
		t.Error("a docker-provider machine counted as a VM")
	}
	r := ct.Report(context.Background())
	if len(r) != 2 || r[0].OK || !strings.Contains(r[0].Text, "weaker than the docker backend") || r[1].OK || !strings.Contains(r[1].Text, "around the allowlist proxy") {
		t.Errorf("the docker provider's report: %+v", r)
	}
	if r := vm.Report(context.Background()); !r[0].OK || !strings.Contains(r[0].Text, "its own kernel") {
		t.Errorf("the VM's report: %+v", r)
	}
}

// TestHostKeyPinned: the machine's SSH host key is trusted at first contact and only that
// key after (a machine whose key changed is refused, whatever it runs); a machine made
// anew (forget fresh) is trusted anew.
func TestHostKeyPinned(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil)
	f.create("hk1", backend.Spec{})
	g := &sshGuest{v: f.Vagrant, conns: map[backend.ID]*sshConn{}}
	key := func() ssh.PublicKey {
		pub, _, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		k, err := ssh.NewPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	first, other := key(), key()
	check := g.pinned("hk1")
	if err := check("127.0.0.1:2222", nil, first); err != nil {
		t.Fatalf("first contact: %v", err)
	}
	if err := check("127.0.0.1:2222", nil, first); err != nil {
		t.Fatalf("the same key again: %v", err)
	}
	if err := check("127.0.0.1:2222", nil, other); err == nil || !strings.Contains(err.Error(), "host key changed") {
		t.Fatalf("another key: %v", err)
	}
	g.forget("hk1", false)
	if err := check("127.0.0.1:2222", nil, other); err == nil {
		t.Fatal("a reconnection forgot the pinned key")
	}
	g.forget("hk1", true)
	if err := check("127.0.0.1:2222", nil, other); err != nil {
		t.Fatalf("a machine made anew: %v", err)
	}
}
