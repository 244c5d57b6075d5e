package guest

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Untraceable makes the calling process out of reach of the processes it serves: once it
// is not dumpable, attaching with ptrace, and reading its /proc/PID/mem or environ, need
// CAP_SYS_PTRACE, which nothing in a sandbox holds. A tracer attached to the guest could
// stop it, which wedged the whole sandbox, or speak on its connections. The processes
// the guest starts are dumpable again once they exec, as they should be: a sandbox's own
// processes may debug one another.
func Untraceable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the guest untraceable: %w", err)
	}
	return nil
}
