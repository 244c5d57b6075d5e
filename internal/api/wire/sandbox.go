package wire

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/paddockhq/paddock/internal/inside"
)

// SandboxInfo is a sandbox as the user sees it.
type SandboxInfo struct {
	Name       string `json:"name"`
	Backend    string `json:"backend"`
	State      string `json:"state"`
	Detail     string `json:"detail,omitempty"`
	SourcePath string `json:"source_path,omitempty"`
	SourceURL  string `json:"source_url,omitempty"`
	BaseCommit string `json:"base_commit,omitempty"`
	// Network is "closed" (loopback only, egress through the allowlist proxy) or "open".
	Network string `json:"network"`
	// SyncMode is manual, on-commit or on-idle.
	SyncMode string `json:"sync_mode"`
	// Runtime is the OCI runtime the sandbox runs under (runsc: gVisor); empty is the
	// backend's default.
	Runtime   string    `json:"runtime,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Limits are the resource limits in force on a running sandbox, read back from where
	// the backend enforces them; LimitsNote says why there are none when there are none.
	Limits     *Limits `json:"limits,omitempty"`
	LimitsNote string  `json:"limits_note,omitempty"`
	// IdleStopSeconds is the sandbox's own idle stop (up --idle-stop); 0: the config's.
	IdleStopSeconds int64 `json:"idle_stop_seconds,omitempty"`
	// Agents are the agents the sandbox was made for (up --agent), the first first.
	Agents []string `json:"agents,omitempty"`
	// Owner is the GitHub login of who made the sandbox, on a daemon a team signs in
	// to; empty for the daemon host's own.
	Owner string `json:"owner,omitempty"`
	// Usage is what the sandbox's model calls through the credential proxy used, with
	// their estimated cost; nil when it made none (or the daemon does not meter).
	Usage *UsageSum `json:"usage,omitempty"`
	// Stale says State and Detail are as last read: the backend did not answer the
	// listing in time (see lastread); a read goes on for the next listing.
	Stale bool `json:"stale,omitempty"`
	// Resumed names the sessions a start brought back, each continuing its conversation.
	Resumed []string `json:"resumed,omitempty"`
	// Alarms counts the sandbox's standing alarms: its agent went for its own controls
	// (paddock alarms NAME says how).
	Alarms int `json:"alarms,omitempty"`
}

// DefaultAgent is the agent of a session that names none.
const DefaultAgent = "claude"

// SessionSocket is the tmux server socket of a sandbox's sessions, inside it.
const SessionSocket = inside.Run + "/tmux.sock"

// SandboxCreateRequest describes a new sandbox and the repository state to seed it with:
// the X-Paddock-Request header of POST /v1/sandboxes.
type SandboxCreateRequest struct {
	Name    string `json:"name"`
	Backend string `json:"backend,omitempty"`
	Rootfs  string `json:"rootfs,omitempty"`
	// SourcePath is the host repo the workspace is cloned from (recorded for sync).
	SourcePath string `json:"source_path"`
	// SourceURL is the git URL the user gave, when the host repo is a clone of it.
	SourceURL string `json:"source_url,omitempty"`
	// Clone asks the daemon to clone SourceURL itself, on its host with its credentials,
	// and seed the workspace from that clone: the request has no bundle, and Commit,
	// Branch and the git identity come from the clone (`up GIT-URL` through a context).
	Clone bool `json:"clone,omitempty"`
	// Origin becomes the workspace's origin remote, when set.
	Origin string `json:"origin,omitempty"`
	// Branch is checked out in the workspace; empty means a detached Commit.
	Branch string `json:"branch,omitempty"`
	Commit string `json:"commit"`
	// GitName and GitEmail become the workspace repo's user.name and user.email.
	GitName  string `json:"git_name,omitempty"`
	GitEmail string `json:"git_email,omitempty"`
	// Network is "closed" (the default: loopback only, egress through the allowlist
	// proxy) or "open" (the backend's normal network).
	Network string `json:"network,omitempty"`
	// Agents are the agent kinds the sandbox is for; their service hosts join its
	// default allowlist.
	Agents []string `json:"agents,omitempty"`
	// Image is for backends that run images (docker, kubernetes).
	Image string `json:"image,omitempty"`
	// Placement says where in the backend the sandbox goes (kubernetes: "kube-context",
	// "namespace"), for backends that have places.
	Placement map[string]string `json:"placement,omitempty"`
	// Devcontainer is what the project's devcontainer.json asks (docker).
	Devcontainer *Devcontainer `json:"devcontainer,omitempty"`
	// CPUs, MemoryBytes and PidsLimit limit the sandbox; zero is the default (4 CPUs, 8
	// GiB, 4096 processes), and each is clamped to what the host has.
	CPUs        float64 `json:"cpus,omitempty"`
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	PidsLimit   int64   `json:"pids,omitempty"`
	// DiskBytes bounds what the workspace may take of the host's disk (bwrap, docker, as
	// root); zero is none. A backend that cannot set it refuses the sandbox.
	DiskBytes int64 `json:"disk_bytes,omitempty"`
	// Runtime is the OCI runtime to run the sandbox under (docker: runsc for gVisor);
	// empty is the backend's default ([backends.docker] runtime in the config).
	Runtime string `json:"runtime,omitempty"`
	// IdleStopSeconds stops the sandbox after this long unused (with a final snapshot),
	// instead of the config's idle_stop; zero means the config's.
	IdleStopSeconds int64 `json:"idle_stop_seconds,omitempty"`
}

// PlaceHost is the placement naming the machine a sandbox runs on (`up --host`), which
// implies the backend that takes it.
const PlaceHost = "host"

// Limits are the resource limits of a sandbox: at most CPUs processors' worth of time,
// MemoryBytes of memory (and no swap beyond it), Pids processes and threads, and, when
// DiskBytes is set, at most that much of the host's disk for its workspace.
type Limits struct {
	CPUs        float64 `json:"cpus"`
	MemoryBytes int64   `json:"memory_bytes"`
	Pids        int64   `json:"pids"`
	DiskBytes   int64   `json:"disk_bytes,omitempty"`
}

// String says the limits as the doctor and `paddock ls` say them.
func (l Limits) String() string {
	s := fmt.Sprintf("%s CPUs, %s memory, %d processes", strconv.FormatFloat(l.CPUs, 'f', -1, 64), FormatBytes(l.MemoryBytes), l.Pids)
	if l.DiskBytes > 0 {
		s += ", " + FormatBytes(l.DiskBytes) + " disk"
	}
	return s
}

// FormatBytes writes a size the way --memory takes it: 512m, 8g, 1536k.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// ProviderInfo is a model provider of the credential proxy, as GET /v1/providers shows
// it: never the key itself.
type ProviderInfo struct {
	Name string `json:"name"`
	// Key says where its key comes from ("config", "command", "env", "file", or
	// "login" while a subscription login stands for it); "" when it has none.
	Key string `json:"key"`
	// Login is the subscription login (`paddock login NAME`) that can stand for its key.
	Login string `json:"login,omitempty"`
	// KeyEnv names the daemon's environment variable the key comes from, when Key is
	// "env" (ANTHROPIC_API_KEY).
	KeyEnv string `json:"key_env,omitempty"`
}

// Doctor is what GET /v1/doctor reports.
type Doctor struct {
	Backends []BackendReport `json:"backends"`
	Agents   []AgentReport   `json:"agents"`
	// Logins are the subscription logins and whether each still works.
	Logins []LoginStatus `json:"logins"`
}

// BackendReport says whether a backend works here, and if not, why and how to fix it.
type BackendReport struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Default   bool   `json:"default"`
	Reason    string `json:"reason,omitempty"`
	Fix       string `json:"fix,omitempty"`
	// Runtimes reports on the stronger OCI runtimes the backend can use (docker: runsc).
	Runtimes []RuntimeReport `json:"runtimes,omitempty"`
	// Findings are what the backend enforces here and what it cannot: resource limits,
	// disk quota.
	Findings []BackendFinding `json:"findings,omitempty"`
	// VM says its sandboxes are virtual machines with a kernel of their own (the vagrant
	// backend on a hypervisor).
	VM bool `json:"vm,omitempty"`
	// HostSystem says its sandboxes run the host's own programs: an agent not installed
	// on the host is not in them either.
	HostSystem bool `json:"host_system,omitempty"`
	// Isolation, Preference, Emulated and Slow are the backend's description
	// (the backend's Description): its tier of isolation, its place among the defaults (0:
	// none), whether its sandboxes are emulated here and what that costs. "Just do it"
	// chooses by them.
	Isolation  Isolation `json:"isolation,omitempty"`
	Preference int       `json:"preference,omitempty"`
	Emulated   bool      `json:"emulated,omitempty"`
	Slow       string    `json:"slow,omitempty"`
	// BuildsImages says it builds a sandbox's image from a devcontainer.json.
	BuildsImages bool `json:"builds_images,omitempty"`
}

// RuntimeReport says whether a runtime can be used here, and if not, how to fix it.
type RuntimeReport struct {
	Name string `json:"name"`
	// Available is true when the engine has the runtime registered and it can run a
	// sandbox.
	Available bool `json:"available"`
	// Isolation is the tier a sandbox gets under this runtime (runsc: a user-space
	// kernel), for the automatic choices.
	Isolation Isolation `json:"isolation,omitempty"`
	// Detail says what the runtime is or, when it is not available, why.
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// BackendFinding is one thing a backend says about this host in `paddock doctor`, beyond
// whether it runs at all: a protection it enforces here, or one it cannot, and how to
// fix that.
type BackendFinding struct {
	// Topic names what it is about: "limits", "disk quota".
	Topic string `json:"topic"`
	// OK is false when the protection does not hold here.
	OK   bool   `json:"ok"`
	Text string `json:"text"`
	Fix  string `json:"fix,omitempty"`
}

// AgentReport says whether an agent CLI can run in a sandbox that sees the host's /usr
// (the bwrap backend without a rootfs), and how to get it if not.
type AgentReport struct {
	Name string `json:"name"`
	// Binary is the agent CLI's command, as a sandbox runs it.
	Binary    string `json:"binary,omitempty"`
	Available bool   `json:"available"`
	Path      string `json:"path,omitempty"`
	Install   string `json:"install,omitempty"`
	Status    string `json:"status_source"`
	// Tested says what paddock's own tests run of the agent, for real or not.
	Tested string `json:"tested"`
	// Disposable is true when the agent can be told its sandbox is disposable (it reads a
	// memory file).
	Disposable bool `json:"disposable"`
}

// Isolation is how strongly a sandbox is kept from the host, weakest first. Automatic
// choices (the default backend, the TUI's "Just do it") read it, with Emulated, from a
// backend's Description; none of them tests a backend's name.
type Isolation int

// The tiers of isolation.
const (
	// IsolationUnranked is for backends no automatic choice takes: what their sandboxes
	// are depends on a machine the user names (a remote host over SSH).
	IsolationUnranked Isolation = iota
	// IsolationNamespaces: the host's kernel, behind namespaces, a system call filter
	// and a cgroup (bubblewrap).
	IsolationNamespaces
	// IsolationContainer: a container engine's container under the host's kernel (runc).
	IsolationContainer
	// IsolationUserKernel: a kernel in user space between the agent and the host's
	// kernel (gVisor's runsc).
	IsolationUserKernel
	// IsolationVM: a virtual machine with a kernel of its own.
	IsolationVM
)

var isolationNames = []string{"", "namespaces", "container", "user-space kernel", "vm"}

// String names the tier as the doctor and the dialog say it.
func (i Isolation) String() string {
	if int(i) < len(isolationNames) && i >= 0 {
		return isolationNames[i]
	}
	return fmt.Sprintf("isolation(%d)", int(i))
}

// MarshalText writes the tier's name, for the wire.
func (i Isolation) MarshalText() ([]byte, error) { return []byte(i.String()), nil }

// UnmarshalText reads a tier's name; an unknown one is unranked.
func (i *Isolation) UnmarshalText(b []byte) error {
	*i = Isolation(max(0, slices.Index(isolationNames, string(b))))
	return nil
}

// SyncRecord is one recorded sync: when, and what it fetched (the sync command's JSON).
type SyncRecord struct {
	Time   time.Time       `json:"time"`
	Result json.RawMessage `json:"result"`
}

// SyncModeRequest is the body of PUT /v1/sandboxes/{name}/sync-mode.
type SyncModeRequest struct {
	Mode string `json:"mode"`
}

// ImageBuildRequest is the body of POST /v1/images/build.
type ImageBuildRequest struct {
	Backend string   `json:"backend,omitempty"`
	Tag     string   `json:"tag,omitempty"`
	Agents  []string `json:"agents,omitempty"`
	Minimal bool     `json:"minimal,omitempty"`
	// Dockerfile and Context (absolute host paths) build that Dockerfile instead.
	Dockerfile string `json:"dockerfile,omitempty"`
	Context    string `json:"context,omitempty"`
	// Format, when set, names a backend whose own form of the image is made too, ahead
	// of its first sandbox: "microvm" (its kernel and root file system).
	Format string `json:"format,omitempty"`
}

// ImageLoadRequest is the body of POST /v1/images/load.
type ImageLoadRequest struct {
	Backend string `json:"backend"`
	// Image is the local image to load; empty is the backend's default image.
	Image string `json:"image,omitempty"`
}

// MergeRequest are a merge's choices (see gitsync.MergeRequest).
type MergeRequest struct {
	Branch string `json:"branch,omitempty"`
	WIP    bool   `json:"wip,omitempty"`
	// Yes accepts the files that run code on the host once merged.
	Yes bool `json:"yes,omitempty"`
	// Check only plans the merge.
	Check bool `json:"check,omitempty"`
	// Commit, when set, is the commit the plan shown merged (gitsync.MergeRequest.Expect).
	Commit string `json:"commit,omitempty"`
}

// Devcontainer is what paddock takes from a devcontainer.json.
type Devcontainer struct {
	// Image to run, or Dockerfile (absolute host path) and Context to build.
	Image      string `json:"image,omitempty"`
	Dockerfile string `json:"dockerfile,omitempty"`
	Context    string `json:"context,omitempty"`
	// Env is containerEnv, KEY=VALUE.
	Env []string `json:"env,omitempty"`
	// RemoteUser is the user the project expects; paddock always runs as agent.
	RemoteUser string `json:"remote_user,omitempty"`
	// PostCreate is postCreateCommand, run once in /workspace after the sandbox is made.
	PostCreate []string `json:"post_create,omitempty"`
	// ForwardPorts are recorded for the port preview.
	ForwardPorts []int `json:"forward_ports,omitempty"`
}

// ProgressEvent is one line of an NDJSON progress stream. The last line has Done set,
// with Sandbox on success or Error on failure.
type ProgressEvent struct {
	Step    string       `json:"step,omitempty"`
	Done    bool         `json:"done,omitempty"`
	Sandbox *SandboxInfo `json:"sandbox,omitempty"`
	// Snapshot is the snapshot taken (or restored from).
	Snapshot *SnapshotManifest `json:"snapshot,omitempty"`
	// Bisect and Fork are a bisect's and a fork's answers.
	Bisect *BisectResult `json:"bisect,omitempty"`
	Fork   *ForkResult   `json:"fork,omitempty"`
	Error  *ErrorBody    `json:"error,omitempty"`
}
