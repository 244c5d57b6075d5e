package docker

import (
	"context"
	"os/exec"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/backend"
)

// Expect implements backend.Expecter: under gVisor (the runsc runtime, the config's
// default) limits end the whole sandbox and gVisor's own kernel serves what the host's
// would refuse; under runc, the engine's default seccomp profile lets io_uring through
// before Docker Engine 25.0.
func (d *Docker) Expect(ctx context.Context) backend.Expect {
	if d.runtime == Runsc {
		return backend.Expect{
			LimitsEndSandbox: true,
			Allows: map[string]string{
				"io_uring_setup":         "gVisor implements io_uring itself: the host kernel's is never reached",
				"unshare(CLONE_NEWUSER)": "a user namespace of gVisor's kernel, not of the host's",
				"agent-environ": "gVisor's /proc opens a process's environ for its own user even when it is not dumpable; " +
					"the agent's environment is the one every process of the sandbox is given",
			},
		}
	}
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").Output()
	if err != nil {
		return backend.Expect{}
	}
	version := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(version, ".")
	if n, err := strconv.Atoi(major); err != nil || n >= 25 {
		return backend.Expect{}
	}
	return backend.Expect{Allows: map[string]string{
		"io_uring_setup": "the default seccomp profile of Docker Engine " + version + " allows io_uring (25.0 refuses it)"}}
}
