package docker

import (
	"context"

	"github.com/paddockhq/paddock/internal/backend"
)

// Expect implements backend.Expecter: under gVisor (the runsc runtime, asked for or the
// config's default) limits end the whole sandbox and gVisor's own kernel serves what the host's
// would refuse; under runc, paddock's seccomp profile refuses all that the checks try,
// whatever the engine's version.
func (d *Docker) Expect(ctx context.Context, runtime string) backend.Expect {
	if d.runtimeOf(backend.Spec{Runtime: runtime}) == Runsc {
		return backend.Expect{
			LimitsEndSandbox: true,
			Allows: map[string]string{
				"io_uring_setup":         "gVisor implements io_uring itself: the host kernel's is never reached",
				"unshare(CLONE_NEWUSER)": "a user namespace of gVisor's kernel, not of the host's",
				"agent-environ": "gVisor's /proc opens a process's environ for its own user even when it is not dumpable; " +
					"the agent's environment is the one every process of the sandbox is given",
				"pid1-stop": "gVisor's kernel lets a process inside stop the sandbox's init (the guest's ns-init) with SIGSTOP; " +
					"an open item: its orphans' zombies wait until it is continued",
			},
		}
	}
	// Under runc the sandbox has paddock's own seccomp profile (seccomp.go), which
	// refuses io_uring whatever the engine's version, and its process 1 is the guest's
	// ns-init, not dumpable: nothing of that is let through.
	return backend.Expect{}
}
