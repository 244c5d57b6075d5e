// Package conform holds the checks every backend must pass: its lifecycle, exec, PTYs,
// files, tunnels and, above all, isolation, driven through the real guest of a real
// sandbox. Its checks are written against T, which a test's *testing.T meets through
// backendtest (every backend's conformance test) and which `paddock verify` meets with a
// runner of its own, from the installed binary, with no Go toolchain.
package conform

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestclient"
)

// Harness is what the suite needs from a backend's test, or from verify.
type Harness struct {
	// Backend under test.
	Backend backend.Backend
	// Spec returns a spec for a new sandbox with the given ID; the suite sets nothing
	// else, so the harness fills GuestBinary, GuestSHA256 and anything backend-specific.
	Spec func(id backend.ID) backend.Spec
	// Leftovers, when set, lists what a destroyed sandbox left on the host (processes,
	// mounts, directories, containers, volumes); the suite requires it to be empty.
	Leftovers func(id backend.ID) []string
	// HostSecrets, optional, are host paths (in directories that exist) where the suite
	// plants a secret file while it runs, besides the ones it always plants (the daemon's
	// home, and /etc as root): the places this backend could expose. No process inside may
	// read them.
	HostSecrets []string
	// LimitsEndSandbox says the backend's memory and process limits bind the sandbox as a
	// whole, not each process in it: a fork bomb or a memory hog ends the whole sandbox,
	// which its engine starts again. So it is under gVisor (runsc), whose user-space kernel
	// is what the host's limits count, and whose 2022 builds keep no per-process count of
	// their own. The limits checks then require that, instead of a refused fork and a
	// killed process in a sandbox that goes on.
	LimitsEndSandbox bool
	// Allows, optional, names what this backend lets a process inside do that the
	// KernelSurface and AgentUntraceable checks otherwise fail on, each with why: a
	// kernel of the sandbox's own serves the call (gVisor's, in user space, never the
	// host's), or the filter that would refuse it is the engine's, not paddock's. The
	// keys are the checks' names for what they try: a call ("io_uring_setup",
	// "unshare(CLONE_NEWUSER)"), or "ptrace-seize", "ptrace-attach", "agent-environ",
	// "agent-mem", "pid1-ptrace", "pid1-stop". The checks log what they allow, and fail on
	// anything else.
	Allows map[string]string
	// Dir, optional, is the backend's own directory on the host: the soak test requires
	// that cycles leave no entry behind in it.
	Dir string
	// PidsLimit, when set, is the process limit every sandbox of this backend has,
	// whatever its spec asks: Kubernetes limits every pod of a node alike (the kubelet's
	// podPidsLimit) and cannot limit one. The limits sandbox then asks for it.
	PidsLimit int64
	// Machine, when set, says the sandbox is a whole machine of its own (a VM) whose user
	// has root through sudo and whose network is the machine's: the boundary is the
	// machine, not a namespace on the host. The checks of what a process inside may do
	// to its own kernel (Privileges, KernelSurface), of its network (Network, Egress, DNS,
	// Metadata) and of limits (the machine's size is its limit) are then skipped, each
	// saying so with this reason; every other check runs.
	Machine string
}

// Suite runs every check, each as a subtest of t named as in Checks. Checks share one
// sandbox where that is safe, so the suite stays fast; the lifecycle and limits checks
// make their own.
func Suite(t T, h Harness) {
	// machine skips a check that a whole machine of the sandbox's own contradicts.
	machine := func(f func(t T)) func(t T) {
		return func(t T) {
			if h.Machine != "" {
				t.Skip("the sandbox is a machine of its own: " + h.Machine)
			}
			f(t)
		}
	}
	t.Run("Lifecycle", func(t T) { testLifecycle(t, h) })
	t.Run("Limits", machine(func(t T) { testLimits(t, h) }))

	ctx := context.Background()
	id := NewID()
	sb := start(t, h, id)
	t.Run("Exec", func(t T) { testExec(t, sb) })
	t.Run("Environment", func(t T) { testEnvironment(t, sb) })
	t.Run("PTY", func(t T) { testPTY(t, sb) })
	t.Run("Files", func(t T) { testFiles(t, sb) })
	t.Run("Tar", func(t T) { testTar(t, sb) })
	t.Run("SymlinkEscape", func(t T) { testSymlinkEscape(t, sb) })
	t.Run("Tunnels", func(t T) { testTunnels(t, sb) })
	t.Run("Network", machine(func(t T) { testNetwork(t, sb) }))
	t.Run("HostSecrets", func(t T) { testHostSecrets(t, sb) })
	t.Run("WriteRace", func(t T) { testWriteRace(t, sb) })
	t.Run("Hardlinks", func(t T) { testHardlinks(t, sb) })
	t.Run("Egress", machine(func(t T) { testEgress(t, sb) }))
	t.Run("DNS", machine(func(t T) { testDNS(t, sb) }))
	t.Run("Metadata", machine(func(t T) { testMetadata(t, sb) }))
	t.Run("HostLoopback", func(t T) { testHostLoopback(t, sb) })
	t.Run("OwnPids", func(t T) { testOwnPids(t, sb) })
	t.Run("KernelReadOnly", func(t T) { testKernelReadOnly(t, sb) })
	t.Run("Privileges", machine(func(t T) { testPrivileges(t, sb) }))
	t.Run("HostSockets", func(t T) { testHostSockets(t, sb) })
	t.Run("TIOCSTI", func(t T) { testTIOCSTI(t, sb) })
	t.Run("KernelSurface", machine(func(t T) { testKernelSurface(t, sb) }))
	t.Run("AgentUntraceable", func(t T) { testAgentUntraceable(t, sb) })
	t.Run("OutputFlood", func(t T) { testOutputFlood(t, sb) })
	t.Run("DiskFull", machine(func(t T) { testDiskFull(t, h, sb) }))
	t.Run("Reconnect", func(t T) { testReconnect(t, sb) })
	if err := h.Backend.Destroy(ctx, id); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
}

// sandbox is a running sandbox with a connected client.
type sandbox struct {
	h      Harness
	id     backend.ID
	client *guestclient.Client
}

// NewID is a fresh random sandbox ID, as the checks make them.
func NewID() backend.ID {
	b := make([]byte, 5)
	rand.Read(b)
	return backend.ID("t" + hex.EncodeToString(b))
}

func start(t T, h Harness, id backend.ID) *sandbox {
	t.Helper()
	return startSpec(t, h, id, h.Spec(id))
}

// startSpec creates and starts sandbox id of spec, destroyed when t ends (a no-op once a
// check has destroyed it), and connects to its guest.
func startSpec(t T, h Harness, id backend.ID, spec backend.Spec) *sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := h.Backend.Create(ctx, spec); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { h.Backend.Destroy(context.Background(), id) })
	if err := h.Backend.Start(ctx, id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return &sandbox{h: h, id: id, client: connect(t, h, id)}
}

func connect(t T, h Harness, id backend.ID) *guestclient.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := guestclient.New(ctx, func(ctx context.Context) (net.Conn, error) {
		return h.Backend.Dial(ctx, id)
	}, "conformance")
	if err != nil {
		t.Fatalf("connect to the guest: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// run executes a shell command in the sandbox and returns its exit code and output.
func (sb *sandbox) run(t T, script string) (int, string, string) {
	t.Helper()
	return runWith(t, sb.client, guestclient.ExecOptions{Argv: []string{"sh", "-c", script}})
}

func runWith(t T, c *guestclient.Client, opts guestclient.ExecOptions) (int, string, string) {
	t.Helper()
	// Generous: a command that works may be slow under emulation (the memory hog takes
	// about 50 s in a VM under TCG on a busy machine); this only bounds a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr strings.Builder
	opts.Stdout, opts.Stderr = &stdout, &stderr
	code, err := c.Exec(ctx, opts)
	if err != nil {
		t.Fatalf("exec %q: %v", opts.Argv, err)
	}
	return code, stdout.String(), stderr.String()
}

// mustRun runs a script that must succeed and returns its trimmed stdout.
func (sb *sandbox) mustRun(t T, script string) string {
	t.Helper()
	code, out, errOut := sb.run(t, script)
	if code != 0 {
		t.Fatalf("%q exited %d: %s%s", script, code, out, errOut)
	}
	return strings.TrimSpace(out)
}

func wantState(t T, h Harness, id backend.ID, want backend.State) {
	t.Helper()
	st, err := h.Backend.State(context.Background(), id)
	if err != nil {
		t.Fatalf("State: %v", err)
	}
	if st.State != want {
		t.Fatalf("State = %s (%s), want %s", st.State, st.Detail, want)
	}
}
