// Package inside names the paths every sandbox has, whatever its backend: where the work
// is, the agent user's home, paddock's runtime directory and the guest's binary.
// Backends make them; the daemon, sessions and agent adapters use them. Shell scripts
// and config templates written as text spell them out, and say so.
package inside

const (
	// Workspace is the repository's working tree, the agents' working directory.
	Workspace = "/workspace"
	// Deliverables is kept whole by snapshots and shown by the web UI.
	Deliverables = Workspace + "/deliverables"
	// Worktrees holds the sessions' worktrees (paddock worktree add).
	Worktrees = Workspace + "/.worktrees"
	// Home is the home of the sandbox's user, agent (uid 1000).
	Home = "/home/agent"
	// User is the sandbox's user.
	User = "agent"
	// Run is paddock's runtime directory: the guest's socket, tmux's, session status.
	Run = "/run/paddock"
	// GuestSocket is where the resident guest listens when its backend starts it on a
	// socket (docker, kubernetes, vagrant). The file keeps the guest's former name: the
	// guests of sandboxes made before the rename listen there.
	GuestSocket = Run + "/agent.sock"
	// StatusDir holds each session's status file, written by `paddock guest notify`.
	StatusDir = Run + "/sessions"
	// GuestBinary is the guest, injected read-only into every sandbox.
	GuestBinary = "/opt/paddock/bin/paddock"
	// GuestCommand is the command of GuestBinary whose subcommands (serve, connect, ports,
	// notify) the daemon, the backends and agents' hooks run inside a sandbox. People type
	// `paddock guest`; what paddock runs and writes still says "agent", the hidden alias
	// every guest binary answers to, because a sandbox keeps the binary it was made with
	// and a binary from before the rename knows only "agent". Make it "guest" once no
	// sandbox can hold such a binary.
	GuestCommand = "agent"
)
