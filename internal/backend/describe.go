package backend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// Isolation is how strongly a sandbox is kept from the host, weakest first
// (wire.Isolation).
type Isolation = wire.Isolation

// The tiers of isolation (wire.Isolation's).
const (
	IsolationUnranked   = wire.IsolationUnranked
	IsolationNamespaces = wire.IsolationNamespaces
	IsolationContainer  = wire.IsolationContainer
	IsolationUserKernel = wire.IsolationUserKernel
	IsolationVM         = wire.IsolationVM
)

// Description is what a backend is and can do, as data: every choice of a backend (the
// default, the TUI's "Just do it", what `up` refuses, where an image is built, what
// `backend serve` offers) reads it, and none tests a backend's name. A backend gives it
// once at registration (Register: what it is under its default settings) and again,
// as configured on this machine, from its Describe; the fields a configuration cannot
// change are the same in both, and its methods match what it says it can do
// (CheckMethods: a test holds every registered backend to it).
type Description struct {
	// Isolation is the tier of its sandboxes under its default runtime.
	Isolation Isolation
	// OwnKernel says each sandbox is a virtual machine running a kernel of its own under
	// a hypervisor here (a Vagrant machine on VirtualBox: yes; on Vagrant's docker
	// provider: no).
	OwnKernel bool
	// Machine says each sandbox is a whole machine of its own where the agent has sudo:
	// agents are told so.
	Machine bool
	// HostSystem says its sandboxes run the host's own programs (its /usr): an agent
	// must be installed on the host to run in one.
	HostSystem bool
	// Default orders the backends `paddock up` takes when none is named or configured:
	// 1 first, then 2; 0 never (a backend that needs setting up, or reaches beyond this
	// machine).
	Default int
	// Serves says a machine offers it to another machine's daemon (`paddock backend
	// serve`, run over SSH), in the order of Default.
	Serves bool
	// Emulated says its sandboxes run under an emulator here (a VM where KVM does not
	// work): they work, slowly, and no automatic choice takes the backend; the user
	// still may, by naming it.
	Emulated bool
	// Slow says, when Emulated, why and what it costs, in words for the user ("no
	// /dev/kvm: QEMU emulates the processor, about 100 s to start a sandbox").
	Slow string
	// Elsewhere, when set, says its sandboxes run on machines it reaches from here
	// whether or not paddock was set up for them (a cluster through the user's own
	// kubeconfig), in words for the user: `paddock verify` then checks it only when
	// named or configured, never by default.
	Elsewhere string
	// Suspend, when set, says it can suspend a running sandbox (Suspender), and which
	// of its sandboxes, in words for the user ("QEMU VMs").
	Suspend string
	// Lists says it reads all its sandboxes' states in one call (Lister).
	Lists bool
	// Limits says it enforces resource limits and reads them back (LimitReader).
	Limits bool
	// DiskLimit says it can bound a sandbox's workspace on the disk (DiskLimiter).
	DiskLimit bool
	// Images says what it does with sandbox images.
	Images Images
	// Placement are the keys of Spec.Placement it takes (kubernetes: its context and
	// namespace), each the name of `up`'s flag.
	Placement []string
	// Runtimes says it runs sandboxes under an OCI runtime of the user's choice
	// (RuntimeSelector: --runtime).
	Runtimes bool
	// Tools are the programs that isolate its sandboxes, whose versions `paddock
	// verify` reports.
	Tools []Tool
}

// Images is what a backend does with sandbox images; each ability is a method.
type Images struct {
	// Build: it runs sandboxes from images it builds locally (ImageBuilder).
	Build bool `json:"build,omitempty"`
	// Load: it runs images kept outside the host's engine, and copies local ones there
	// (ImageLoader).
	Load bool `json:"load,omitempty"`
	// Prepare: it boots a built image in a form of its own, made ahead of its first
	// sandbox with `paddock image build --format NAME` (ImagePreparer).
	Prepare bool `json:"prepare,omitempty"`
	// Dockerfile: it builds an image from a Dockerfile (DockerfileBuilder).
	Dockerfile bool `json:"dockerfile,omitempty"`
}

// Runs says it runs sandboxes from images (built here or loaded), so `up --image` is
// for it.
func (i Images) Runs() bool { return i.Build || i.Load }

// Tool is a program whose version `paddock verify` reports.
type Tool struct {
	// Name is the key of its version in the report ("bubblewrap").
	Name string
	// Argv runs it to print its version.
	Argv []string
	// Runtime, when set, says the tool is only for sandboxes under that runtime.
	Runtime string
}

// Expect is what the security checks (the conformance suite, `paddock verify`) expect of
// a backend's sandboxes where it differs from a namespaced sandbox on the host's kernel:
// conform.Harness's fields of the same names say what each means.
type Expect struct {
	// Machine, when set, says the sandbox is a whole machine of its own, and why the
	// checks of its kernel, network and limits do not apply.
	Machine string
	// LimitsEndSandbox says a fork bomb or a memory hog ends the whole sandbox.
	LimitsEndSandbox bool
	// Allows names what a process inside may do that the kernel checks otherwise
	// refuse, each with why.
	Allows map[string]string
	// PidsLimit is the process limit every sandbox has whatever its spec asks, if any.
	PidsLimit int64
}

// Expecter is implemented by backends whose sandboxes the checks expect something
// other than the zero Expect of.
type Expecter interface {
	// Expect is for sandboxes under runtime (Spec.Runtime; empty is the default).
	Expect(ctx context.Context, runtime string) Expect
}

// ExpectOf is what the checks expect of b's sandboxes under runtime (empty: the default).
func ExpectOf(ctx context.Context, b Backend, runtime string) Expect {
	if e, ok := b.(Expecter); ok {
		return e.Expect(ctx, runtime)
	}
	return Expect{}
}

// CheckMethods says where b's description and its methods disagree: an ability it
// claims without the method that does it, or a method it does not claim; and where its
// description here differs from the one it registered in what no configuration changes.
// nil when they agree.
func CheckMethods(b Backend) error {
	d := b.Describe()
	var errs []error
	has := func(what string, claimed, implemented bool) {
		switch {
		case claimed && !implemented:
			errs = append(errs, fmt.Errorf("its description claims %s, and it has no method for it", what))
		case implemented && !claimed:
			errs = append(errs, fmt.Errorf("it has the method for %s, and its description does not claim it", what))
		}
	}
	_, sus := b.(Suspender)
	has("Suspend", d.Suspend != "", sus)
	_, lists := b.(Lister)
	has("Lists", d.Lists, lists)
	_, limits := b.(LimitReader)
	has("Limits", d.Limits, limits)
	_, disk := b.(DiskLimiter)
	has("DiskLimit", d.DiskLimit, disk)
	_, build := b.(ImageBuilder)
	has("Images.Build", d.Images.Build, build)
	_, load := b.(ImageLoader)
	has("Images.Load", d.Images.Load, load)
	_, prepare := b.(ImagePreparer)
	has("Images.Prepare", d.Images.Prepare, prepare)
	_, dockerfile := b.(DockerfileBuilder)
	has("Images.Dockerfile", d.Images.Dockerfile, dockerfile)
	_, runtimes := b.(RuntimeSelector)
	has("Runtimes", d.Runtimes, runtimes)
	if reg, ok := Registered(b.Name()); !ok {
		errs = append(errs, fmt.Errorf("no backend is registered as %q", b.Name()))
	} else if fixed(reg) != fixed(d) {
		errs = append(errs, fmt.Errorf("its description here differs from the registered one beyond what a configuration changes: %+v, registered %+v", d, reg))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("backend %s: %w", b.Name(), err)
	}
	return nil
}

// fixed is what of a description no configuration or machine changes, comparable.
func fixed(d Description) string {
	d.Isolation, d.OwnKernel, d.Emulated, d.Slow = 0, false, false, ""
	return fmt.Sprintf("%+v", d)
}

// Which names, for the user, the registered backends whose description has what want
// asks, sorted: "docker", "bwrap or docker", "bwrap, docker or microvm".
func Which(want func(Description) bool) string {
	names := NamesWhere(want)
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// SortByDefault orders names by the place their descriptions (desc) give them among the
// defaults, 1 first, those with none (0) last, then by name.
func SortByDefault(names []string, desc func(name string) Description) {
	rank := func(n string) int {
		if d := desc(n).Default; d > 0 {
			return d
		}
		return math.MaxInt
	}
	sort.SliceStable(names, func(i, j int) bool {
		ri, rj := rank(names[i]), rank(names[j])
		return ri < rj || ri == rj && names[i] < names[j]
	})
}
