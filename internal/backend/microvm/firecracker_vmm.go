package microvm

import (
	"context"
	"os/exec"

	"github.com/hashicorp/yamux"

	"github.com/paddockhq/paddock/internal/backend"
)

// firecrackerVMM runs VMs under Firecracker.
type firecrackerVMM struct{ m *MicroVM }

func (f *firecrackerVMM) available(ctx context.Context) error {
	if _, err := exec.LookPath(f.m.settings.Firecracker); err != nil {
		return &backend.UnavailableError{Backend: Name, Reason: "Firecracker (" + f.m.settings.Firecracker + ") is not installed",
			Fix: "install Firecracker's release binary (github.com/firecracker-microvm/firecracker/releases) on the PATH, or use --vmm qemu"}
	}
	return &backend.UnavailableError{Backend: Name, Reason: "booting VMs under Firecracker is not built yet",
		Fix: "use --vmm qemu"}
}

func (f *firecrackerVMM) boot(ctx context.Context, id backend.ID, md meta) error {
	return f.available(ctx)
}

func (f *firecrackerVMM) status(ctx context.Context, id backend.ID) (bool, string, error) {
	return false, "", nil
}

func (f *firecrackerVMM) halt(ctx context.Context, id backend.ID) error { return nil }

func (f *firecrackerVMM) connect(ctx context.Context, id backend.ID) (*yamux.Session, error) {
	return nil, f.available(ctx)
}

func (f *firecrackerVMM) control(ctx context.Context, id backend.ID, req string) ([]byte, error) {
	return nil, f.available(ctx)
}
