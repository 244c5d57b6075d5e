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
		{Topic: "firecracker", OK: false, Text: "the Firecracker driver is tested only against a fake of Firecracker's API (its binary was not run): --vmm firecracker is not built yet"},
	}
}
