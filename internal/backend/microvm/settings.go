package microvm

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/backend"
)

// Settings are the config's [backends.microvm] table.
type Settings struct {
	// VMM is the monitor sandboxes run under by default: "qemu" or "firecracker" (`up
	// --vmm` chooses per sandbox).
	VMM string `toml:"vmm"`
	// Kernel is the compressed kernel image to boot (a bzImage, xz inside, with its
	// modules in /lib/modules/RELEASE); empty: the newest /boot/vmlinuz-*.
	Kernel string `toml:"kernel"`
	// Image is the local engine's image whose file system becomes the VMs' root.
	Image string `toml:"image"`
	// Rootfs, when set, is an ext4 image labelled paddock-root to boot instead.
	Rootfs string `toml:"rootfs"`
	// DiskSize is the size of each sandbox's data disk (workspace, home, and what is
	// written over the root), sparse on the host: "10g".
	DiskSize string `toml:"disk_size"`
	// Accel is QEMU's accelerator: "kvm", "tcg", or empty for KVM where it works.
	Accel string `toml:"accel"`
	// CPU is the processor model QEMU gives the VMs (its -cpu); empty: the host's under
	// KVM, and under TCG "max", every instruction QEMU emulates (AVX2 among them, which
	// native agent binaries such as Claude Code's need: "qemu64" has not even SSE4.2).
	CPU string `toml:"cpu"`
	// QEMU and Firecracker are the monitors' programs; Jailer is Firecracker's jailer,
	// used when set: Firecracker then runs chrooted in the sandbox's directory as
	// JailerUID and JailerGID (which must be set, and not root's).
	QEMU        string `toml:"qemu"`
	Firecracker string `toml:"firecracker"`
	Jailer      string `toml:"jailer"`
	JailerUID   int    `toml:"jailer_uid"`
	JailerGID   int    `toml:"jailer_gid"`
	// StartTimeout is how long, in seconds, a VM may take from boot to its guest's
	// answer.
	StartTimeout int `toml:"start_timeout"`
	// KernelArgs are words added to the guest kernel's command line, after paddock's own
	// (a later word wins): "loglevel=7" shows the whole boot on the VM's console.
	KernelArgs string `toml:"kernel_args"`
}

// DefaultSettings are the settings with nothing configured.
func DefaultSettings() Settings {
	return Settings{VMM: VMMQEMU, Image: "paddock/sandbox:latest", DiskSize: "10g", QEMU: "qemu-system-x86_64",
		Firecracker: "firecracker", StartTimeout: 180}
}

// The monitors.
const (
	VMMQEMU        = "qemu"
	VMMFirecracker = "firecracker"
)

// ParseSettings reads [backends.microvm] over the defaults.
func ParseSettings(opts map[string]any) (Settings, error) {
	s := DefaultSettings()
	if err := backend.DecodeOptions(Name, opts, &s); err != nil {
		return s, err
	}
	if err := checkVMM(s.VMM); err != nil {
		return s, err
	}
	if _, err := parseSize(s.DiskSize); err != nil {
		return s, fmt.Errorf("microvm: disk_size: %w", err)
	}
	switch s.Accel {
	case "", "kvm", "tcg":
	default:
		return s, fmt.Errorf("microvm: accel is kvm, tcg or empty (KVM where it works), not %q", s.Accel)
	}
	for _, p := range []struct{ key, path string }{{"kernel", s.Kernel}, {"rootfs", s.Rootfs}} {
		if p.path != "" && !filepath.IsAbs(p.path) {
			return s, fmt.Errorf("microvm: %s must be an absolute path, not %q", p.key, p.path)
		}
	}
	if s.Jailer != "" && (s.JailerUID <= 0 || s.JailerGID <= 0) {
		return s, fmt.Errorf("microvm: jailer needs jailer_uid and jailer_gid, the user and group (not root's) Firecracker runs as in its chroot")
	}
	for _, w := range strings.Fields(s.KernelArgs) {
		if w == "--" || strings.HasPrefix(w, "init=") || strings.HasPrefix(w, "rdinit=") {
			return s, fmt.Errorf("microvm: kernel_args may not hold %q: paddock's init and its arguments come last", w)
		}
	}
	if s.StartTimeout < 1 {
		return s, fmt.Errorf("microvm: start_timeout is at least 1 (second), not %d", s.StartTimeout)
	}
	return s, nil
}

func checkVMM(v string) error {
	if v != VMMQEMU && v != VMMFirecracker {
		return fmt.Errorf("microvm: the monitor is qemu or firecracker, not %q", v)
	}
	return nil
}

// parseSize reads 512m, 10g, 1048576k or bytes.
func parseSize(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "g"):
		mult, s = 1<<30, strings.TrimSuffix(s, "g")
	case strings.HasSuffix(s, "m"):
		mult, s = 1<<20, strings.TrimSuffix(s, "m")
	case strings.HasSuffix(s, "k"):
		mult, s = 1<<10, strings.TrimSuffix(s, "k")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size (10g, 512m)", s)
	}
	if n*mult < 64<<20 {
		return 0, fmt.Errorf("%q is less than 64m", s)
	}
	return n * mult, nil
}
