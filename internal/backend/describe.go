package backend

import (
	"context"

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

// Description is what a backend is on this machine, as data, given when the daemon
// constructs it: what the automatic choices of a backend read.
type Description struct {
	// Isolation is the tier of its sandboxes under its default runtime.
	Isolation Isolation
	// Default orders the backends `paddock up` takes when none is named or configured:
	// 1 first, then 2; 0 never (a backend that needs setting up, or reaches beyond this
	// machine).
	Default int
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
}

// Describer is implemented by backends that describe themselves; a backend that does
// not is unranked, and never chosen for the user.
type Describer interface {
	Describe() Description
}

// Describe is b's description, or the zero one (unranked) when it gives none.
func Describe(b Backend) Description {
	if d, ok := b.(Describer); ok {
		return d.Describe()
	}
	return Description{}
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
