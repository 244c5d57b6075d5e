package microvm

import (
	"context"
	"fmt"

	"github.com/paddockhq/paddock/internal/backend"
)

// Available says whether the default monitor can run VMs here: its program, a kernel
// with its modules, and mke2fs.
func (m *MicroVM) Available(ctx context.Context) error {
	return m.vmm(m.settings.VMM).available(ctx)
}

// Report implements backend.Reporter: what a VM isolates here, how fast it runs, and
// what the Firecracker driver was tested against.
func (m *MicroVM) Report(ctx context.Context) []backend.Finding {
	accel, why := m.qemu.accel()
	speed := backend.Finding{Topic: "acceleration", OK: true, Text: "QEMU runs VMs under KVM"}
	if accel == "tcg" {
		speed = backend.Finding{Topic: "acceleration", OK: false,
			Text: fmt.Sprintf("no KVM (%s): VMs run under TCG, QEMU's emulator; they work, several times slower (seconds to boot)", why),
			Fix:  "run paddock on a machine (or a VM with nested virtualization) where /dev/kvm works"}
	}
	return []backend.Finding{
		{Topic: "isolation", OK: true, Text: "each sandbox is a VM with its own kernel and no network device (--network open adds a user-mode one, QEMU's slirp); its user has no capability, no_new_privs and paddock's system call filter inside it"},
		speed,
		m.firecrackerFinding(),
	}
}

// firecrackerFinding says how --vmm firecracker was tested: through its API against a
// fake, never on Firecracker itself, and whether KVM, which Firecracker needs, works.
func (m *MicroVM) firecrackerFinding() backend.Finding {
	text := "--vmm firecracker drives Firecracker through its API (machine, boot source, drives, vsock, start, pause, snapshots) " +
		"and reaches the guest over its vsock socket; paddock's tests run it against a faithful fake of that API and of the vsock " +
		"handshake (the guest binary as a host process), never on a real Firecracker booting a kernel (no KVM where it was written)"
	if accel, why := kvmUsable(); accel != "kvm" {
		return backend.Finding{Topic: "firecracker", OK: false, Text: text + "; Firecracker needs KVM, which does not work here (" + why + ")",
			Fix: "use --vmm qemu here, or run paddock where /dev/kvm works"}
	}
	return backend.Finding{Topic: "firecracker", OK: false, Text: text + "; KVM works here: a first real run is untested"}
}
