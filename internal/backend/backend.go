// Package backend defines what a sandbox backend must do and keeps the registry of
// backends by name.
//
// A backend's whole job is the sandbox's lifecycle and one byte stream to the guest
// guest inside it. Everything else (exec, files, PTYs, tunnels, events) goes through the
// guest, so it works the same on every backend.
package backend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"sync"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/inside"
)

// ErrNotFound is returned when the backend has no sandbox with the given ID.
var ErrNotFound = errors.New("no such sandbox in the backend")

// ID identifies a sandbox within one backend. The daemon chooses it (short, [a-z0-9]).
type ID string

// State is a sandbox's lifecycle state as the backend sees it.
type State string

// The states a backend reports.
const (
	StateCreated State = "created" // exists, never started or not yet running
	StateRunning State = "running" // the resident agent is up
	StateStopped State = "stopped" // exists, nothing runs; the workspace is kept
	// StateSuspended: nothing runs, and the memory of what ran is kept for Start to
	// resume it (Suspender).
	StateSuspended State = "suspended"
	StateMissing   State = "missing" // the backend has no trace of it
	StateError     State = "error"   // exists but broken; Detail says why
)

// Spec describes a sandbox to create.
type Spec struct {
	// ID is chosen by the daemon and names the sandbox in the backend.
	ID ID
	// Name is the user-facing name, for labels and hostnames.
	Name string
	// GuestBinary is the host path of a static linux paddock binary to inject as the
	// guest at /opt/paddock/bin/paddock. It and GuestSHA256 keep their former names in
	// JSON, where the ssh backend's wire carries a Spec to hosts of other versions.
	GuestBinary string `json:"AgentBinary"`
	// GuestSHA256 is the hex sha256 of GuestBinary; the backend verifies the copy.
	GuestSHA256 string `json:"AgentSHA256"`
	// Rootfs, when set, is a directory used as the sandbox's root filesystem instead of
	// the host's /usr, /etc and friends (backends that use host directories only).
	Rootfs string
	// Env is the base environment of every process in the sandbox, KEY=VALUE.
	Env []string
	// OpenNetwork gives the sandbox the backend's normal network instead of loopback only.
	OpenNetwork bool
	// Image is the image to run, for backends that use images; their default when empty.
	Image string
	// CPUs, MemoryBytes and PidsLimit limit the sandbox (its processors' time, its memory
	// with no swap beyond it, and its processes and threads); zero means the default
	// (DefaultCPUs, DefaultMemoryBytes, DefaultPids), and each is clamped to what the host
	// has (LimitsFor).
	CPUs        float64
	MemoryBytes int64
	PidsLimit   int64
	// DiskBytes bounds what the sandbox's workspace may take of the host's disk, for
	// backends that implement DiskLimiter; zero means no bound.
	DiskBytes int64
	// Runtime names the OCI runtime the sandbox runs under ("runsc" for gVisor), for
	// backends that implement RuntimeSelector; empty means the backend's default.
	Runtime string
	// Source is the project's directory on the host, when it has one: backends that take
	// their own configuration from a project (its Vagrantfile) look there. The workspace
	// is seeded from git whatever the backend.
	Source string
	// NPM are the npm packages (name@version) the sandbox's agents and MCP servers need,
	// for backends that provision a machine rather than run an image.
	NPM []string
	// Placement says where in the backend the sandbox goes, for backends whose
	// description names its keys (kubernetes: its context and namespace); empty values
	// mean the backend's defaults.
	Placement map[string]string
}

// Status is what State reports.
type Status struct {
	State State
	// Detail explains StateError, or anything unusual, in words for the user.
	Detail string
}

// Backend runs sandboxes. Implementations must be safe for concurrent use on different
// IDs; the daemon never runs two lifecycle calls on the same ID at once.
type Backend interface {
	// Name is the registry name ("bwrap", "docker").
	Name() string
	// Describe is what the backend is and can do as configured on this machine: its
	// registered description, with what the configuration and the machine decide
	// (its tier under the configured runtime, whether it is emulated here).
	Describe() Description
	// Available reports whether the backend can run sandboxes on this machine; a non-nil
	// error is an *UnavailableError saying why and how to fix it.
	Available(ctx context.Context) error
	// Create prepares a sandbox without starting it. Create on an existing ID with the same
	// spec returns nil and changes nothing.
	Create(ctx context.Context, spec Spec) error
	// Start runs the sandbox and its resident guest. Start on a running sandbox
	// returns nil. It returns once the guest accepts connections.
	Start(ctx context.Context, id ID) error
	// Stop ends every process in the sandbox and keeps its workspace. Stop on a stopped
	// sandbox returns nil.
	Stop(ctx context.Context, id ID) error
	// Destroy stops the sandbox and removes everything the backend made for it: processes,
	// mounts, directories. Destroy of a missing ID returns nil.
	Destroy(ctx context.Context, id ID) error
	// State reports the sandbox's state; StateMissing (not an error) when it does not exist.
	State(ctx context.Context, id ID) (Status, error)
	// Dial opens a new byte stream to the resident guest of a running sandbox. Each
	// call gives an independent connection; the guest keeps running when it closes.
	Dial(ctx context.Context, id ID) (net.Conn, error)
}

// Lister is a backend that reads every one of its sandboxes' states in one call, where
// that costs what one State does (a container engine's list): a listing of many
// sandboxes makes one call instead of one per sandbox. A sandbox the map lacks is
// StateMissing (its caller may ask State to be sure); on an error, callers ask State.
type Lister interface {
	States(ctx context.Context) (map[ID]Status, error)
}

// BaseEnv is the environment every process of a sandbox starts with, on every backend
// (the agent user's, and the sandbox's name and id); spec.Env adds to it.
func BaseEnv(spec Spec) []string {
	return []string{"HOME=" + inside.Home, "USER=" + inside.User, "LOGNAME=" + inside.User, "SHELL=/bin/bash", "LANG=C.UTF-8",
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
		"PADDOCK_SANDBOX=" + spec.Name, "PADDOCK_SANDBOX_ID=" + string(spec.ID)}
}

// UnavailableError says why a backend cannot run here and what to do about it.
type UnavailableError struct {
	Backend string
	Reason  string
	Fix     string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("backend %s is not available: %s", e.Backend, e.Reason)
}

// Env is what a backend is given when the daemon constructs it.
type Env struct {
	// Dir is a directory the backend owns for its own files (under PADDOCK_HOME).
	Dir string
	// Options are the backend's own settings from the config file's [backends.NAME] table.
	Options map[string]any
	// ConfigDir is the directory of the config file, where the user's other settings
	// files live (the ssh backend's hosts.json).
	ConfigDir string
	// Hide are host paths no sandbox may read: paddock's own configuration, which may
	// hold API keys. A backend that shows host directories inside masks those of them
	// that lie beneath one.
	Hide []string
	// Shared, when set, is the daemon's Dir for this backend, given to a backend made
	// beside the daemon's (`paddock verify`'s): the files there named by their content
	// (microvm's kernel, initramfs and root file systems, each written whole and then
	// renamed into place) are shared, so what one of them built the other reuses; the
	// rest of Dir is its own.
	Shared string
}

// Factory constructs a backend.
type Factory func(env Env) (Backend, error)

// registration is a registered backend: what it is, and how to make it.
type registration struct {
	desc    Description
	factory Factory
}

var (
	mu       sync.RWMutex
	registry = map[string]registration{}
)

// Register adds a backend under a name, with its description under its default
// settings (what choices made before it is constructed read: Registered) and its
// factory. It panics on a duplicate name: two backends with one name is a programming
// error caught at start-up.
func Register(name string, d Description, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic("backend: duplicate registration of " + name)
	}
	registry[name] = registration{desc: d, factory: f}
}

// Registered is the description the backend name registered with; false when no
// backend has that name.
func Registered(name string) (Description, bool) {
	mu.RLock()
	defer mu.RUnlock()
	r, ok := registry[name]
	return r.desc, ok
}

// NamesWhere lists the registered backends whose registered description has what
// want asks, sorted.
func NamesWhere(want func(Description) bool) []string {
	var out []string
	for _, n := range Names() {
		if d, _ := Registered(n); want(d) {
			out = append(out, n)
		}
	}
	return out
}

// New constructs the backend registered under name.
func New(name string, env Env) (Backend, error) {
	mu.RLock()
	r, ok := registry[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown backend %q (known: %v)", name, Names())
	}
	return r.factory(env)
}

// Names lists registered backends, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// IsMachine reports whether the backend name runs each sandbox as a whole machine
// where the agent has sudo (Description.Machine).
func IsMachine(name string) bool {
	d, _ := Registered(name)
	return d.Machine
}

// Suspender is implemented by backends that can suspend a sandbox: its processes
// paused and its memory saved, so that Start resumes them where they were, rather than
// starting the sandbox afresh from its disk.
type Suspender interface {
	// Suspend saves the running sandbox's memory and ends it; State then reports
	// StateSuspended, and Start resumes it (or, when the saved memory cannot be loaded,
	// starts it afresh, its Status.Detail saying so). A sandbox this backend cannot
	// suspend (its monitor cannot) gets an error wrapping ErrNotSupported, with nothing
	// changed; one that is not running, ErrNotRunning.
	Suspend(ctx context.Context, id ID) error
}

// ErrNotSupported is wrapped by errors for what a backend cannot do for a sandbox.
var ErrNotSupported = errors.New("not supported by this backend")

// ImageLoader is implemented by backends that run images kept outside the host's
// engine, on a cluster's nodes: LoadImage copies a local image there.
type ImageLoader interface {
	LoadImage(ctx context.Context, ref string, progress func(string)) error
}

// Closer is implemented by backends with work of their own in the background (a VM
// being destroyed): the daemon calls Close as it stops, and Close waits for it.
type Closer interface {
	Close()
}

// RuntimeSelector is implemented by backends that can run a sandbox under another OCI
// runtime than their engine's default (Spec.Runtime), such as gVisor's runsc.
type RuntimeSelector interface {
	// DefaultRuntime is the runtime a sandbox gets when its spec names none; empty means
	// the engine's own default.
	DefaultRuntime() string
	// CheckRuntime says whether a sandbox can run under runtime here, with the network
	// asked for: nil, or an *UnavailableError saying why and how to fix it.
	CheckRuntime(ctx context.Context, runtime string, openNetwork bool) error
	// Runtimes reports on the stronger runtimes this backend knows how to use, for the
	// doctor: whether each is installed and registered with the engine.
	Runtimes(ctx context.Context) []RuntimeReport
}

// RuntimeReport is wire.RuntimeReport (the API's wire type).
type RuntimeReport = wire.RuntimeReport

// ImageSpec describes a sandbox image for backends that build images.
type ImageSpec struct {
	// Tag names the image; the backend's default image when empty.
	Tag string
	// NPM are the npm packages (name@version) of the agent CLIs to install; Node asks for
	// Node.js even in a minimal image, for agents whose command is a node script.
	NPM  []string
	Node bool
	// Minimal leaves out compilers and project tools (for tests).
	Minimal bool
	// CacheDir is a directory the build may use for its files.
	CacheDir string
}

// ImageBuilder is implemented by backends that run sandboxes from images they can build
// locally, with no registry.
type ImageBuilder interface {
	BuildImage(ctx context.Context, spec ImageSpec, progress func(string)) (string, error)
}

// ImagePreparer is implemented by backends that boot an engine's image in a form of
// their own (a microVM's kernel and ext4 root file system), made on first use or ahead
// of it: `paddock image build --format NAME`.
type ImagePreparer interface {
	// PrepareImage makes that form of image (the backend's default image when empty),
	// reporting each step, and returns where it is; made before, it is found again.
	PrepareImage(ctx context.Context, image string, progress func(string)) (string, error)
}

// DockerfileBuilder is implemented by backends that can build an image from a Dockerfile.
type DockerfileBuilder interface {
	// BuildDockerfile builds dockerfile (a path inside contextDir) into tag.
	BuildDockerfile(ctx context.Context, contextDir, dockerfile, tag string, progress func(string)) error
}

// WorkspaceCloner is implemented by backends that copy one sandbox's workspace into
// another's of the same backend on their own (a fork), faster than an archive through
// both guests. The copy is a copy: nothing of it is shared with the source afterwards.
type WorkspaceCloner interface {
	// CloneWorkspace copies every entry of from's workspace but those named in leave
	// (top-level names) into to's, which holds nothing else of the same names. No file
	// outside the two workspaces is read or written, whatever links from's holds or
	// gets meanwhile.
	CloneWorkspace(ctx context.Context, from, to ID, leave []string) error
}

// FileSHA256 is the hex sha256 of a file's content, as Spec.GuestSHA256 holds it.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
