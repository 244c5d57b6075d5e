// Package vmspec is what the microvm backend and the init of its VMs (`paddock guest
// vm-init`) agree on: the disks' labels, the ports' names, the sandbox's configuration
// the host writes on the data disk, and the control port's requests.
//
// The package is used by the guest: it must not import the daemon's packages.
package vmspec

// Disk labels: init finds its disks by the label of their ext4 file system, whatever
// order the monitor gives them.
const (
	// RootLabel is the root file system, the image's, read-only and shared by the
	// sandboxes made from one image.
	RootLabel = "paddock-root"
	// DataLabel is the sandbox's own disk: /workspace, the home, and the writable
	// layer over the root file system; kept by stop and start.
	DataLabel = "paddock-data"
)

// Ports are the virtio-console ports' names.
const (
	// GuestPort carries the guest's connections (see internal/portmux).
	GuestPort = "paddock.guest"
	// ControlPort carries the host's requests to init: one line each way.
	ControlPort = "paddock.control"
)

// ConfigPath is where the sandbox's Config is on the data disk (readable by root
// alone); DataGuestDir and friends are the data disk's directories.
const (
	ConfigPath   = "paddock/sandbox.json"
	WorkspaceDir = "workspace"
	HomeDir      = "home"
	UpperDir     = "root/upper"
	WorkDir      = "root/work"
)

// Config is the sandbox as init needs it, written by the host at Create.
type Config struct {
	// Name is the sandbox's name: the VM's hostname and the guest's --sandbox.
	Name string `json:"name"`
	// Env is the guest's whole environment.
	Env []string `json:"env"`
	// MemoryBytes, CPUs and Pids are the limits of the sandbox's cgroup inside the VM.
	MemoryBytes int64   `json:"memory_bytes"`
	CPUs        float64 `json:"cpus"`
	Pids        int64   `json:"pids"`
	// TmpBytes is the size of /tmp (memory).
	TmpBytes int64 `json:"tmp_bytes"`
	// Network, when set, is the VM's network device's configuration (`--network
	// open`); without it the VM has no network device.
	Network *Network `json:"network,omitempty"`
}

// Network is the static configuration init gives the VM's one network interface: the
// addresses of the monitor's user-mode network (QEMU's slirp), which answers no DHCP
// that init would have to wait for.
type Network struct {
	// Address is the interface's address with its prefix length: 10.0.2.15/24.
	Address string `json:"address"`
	// Gateway is the default route's gateway; the monitor forwards what the guest sends
	// it to the host's loopback.
	Gateway string `json:"gateway"`
	// DNS is the resolver written in /etc/resolv.conf.
	DNS string `json:"dns"`
}

// UserNetwork is the user-mode network's layout, as QEMU's -netdev user is told it.
var UserNetwork = Network{Address: "10.0.2.15/24", Gateway: "10.0.2.2", DNS: "10.0.2.3"}

// Control requests, one line each, answered with one line of JSON by init.
const (
	// Poweroff ends every process, syncs and unmounts the disks and powers the VM off.
	Poweroff = "poweroff"
	// ReadLimits answers the limits in force, read from the sandbox's cgroup (Limits).
	ReadLimits = "limits"
	// Sync writes every file system's dirty data to the disks and answers {} once done:
	// before the VM is suspended, so that a saved state that does not load later loses
	// the processes but not the files they wrote.
	Sync = "sync"
	// Processes answers the VM's processes, each with its state and the kernel function
	// it waits in (a JSON string): what a guest that does not answer is doing.
	Processes = "processes"
)

// Limits are what ReadLimits answers.
type Limits struct {
	CPUs        float64 `json:"cpus"`
	MemoryBytes int64   `json:"memory_bytes"`
	Pids        int64   `json:"pids"`
	Error       string  `json:"error,omitempty"`
}

// The vsock channel: a VM whose monitor gives it a virtio-vsock device (Firecracker)
// rather than virtio-console ports. Its kernel command line holds VsockArg; init then
// listens on AF_VSOCK: GuestVsockPort carries the guest's sessions (each connection
// one portmux session), ControlVsockPort the control requests (a line each way per
// connection). The VM powers off by rebooting: Firecracker has no power-off device and
// ends when its guest reboots.
const (
	VsockArg         = "paddock.channel=vsock"
	GuestVsockPort   = 1024
	ControlVsockPort = 1025
)

// VsockModuleList is the list of the vsock device's modules, loaded only by a VM whose
// command line holds VsockArg.
const VsockModuleList = "/lib/modules/paddock-vsock.list"

// KernelArgs are the kernel command line's last words: the arguments the kernel passes
// to /init (the guest binary) after "--".
const KernelArgs = "-- agent vm-init"

// ModuleList is the initramfs's list of kernel modules to load, in order, one path a
// line.
const ModuleList = "/lib/modules/paddock.list"

// NetModuleList is the list of the network device's modules, loaded only by a VM that
// has one.
const NetModuleList = "/lib/modules/paddock-net.list"
