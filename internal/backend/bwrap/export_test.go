package bwrap

import (
	"context"
	"os/exec"

	"github.com/paddockhq/paddock/internal/backend"
)

// BaselineCommand is `bwrap ... true` with the namespaces and host directories a sandbox
// gets, but no agent: the floor a sandbox start is measured against.
func (b *Bwrap) BaselineCommand(ctx context.Context) *exec.Cmd {
	args := []string{"--unshare-all", "--unshare-user", "--uid", "1000", "--gid", "1000", "--disable-userns",
		"--new-session", "--clearenv"}
	for _, d := range hostDirs {
		args = append(args, "--ro-bind-try", "/"+d, "/"+d)
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true")
	return b.command(ctx, args)
}

// Dir is the backend's own directory, for the soak test's count of its entries.
func (b *Bwrap) Dir() string { return b.dir }

// BwrapPID is the pid of the bwrap process of a running sandbox, as Start recorded it.
func (b *Bwrap) BwrapPID(id backend.ID) (int, bool) {
	ri, ok := b.readRun(id)
	return ri.BwrapPID, ok && ri.alive()
}

// ChildPID is the pid of the sandbox's init (bwrap's, in the sandbox's pid namespace).
func (b *Bwrap) ChildPID(id backend.ID) (int, bool) {
	ri, ok := b.readRun(id)
	return ri.ChildPID, ok && ri.alive()
}

// DisableSeccomp starts sandboxes without the seccomp filter: the benchmarks' baseline.
func (b *Bwrap) DisableSeccomp() { b.noSeccomp = true }
