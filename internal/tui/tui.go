// Package tui is paddock's terminal UI: every sandbox and session at a glance, kept
// current from the daemon's event stream, with keys to attach, restart, sync, diff, stop,
// delete, message and start sessions. It talks to the daemon only through Daemon (the API
// client satisfies it) and runs paddock itself for what the CLI does on the host side
// (attach, sync, diff, up).
package tui

import (
	"context"
	"io"
	"os/exec"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
)

// Daemon is what the TUI asks of the daemon; *client.Client implements it. Every call is
// made off the UI's goroutine, so a slow daemon never freezes the screen.
type Daemon interface {
	List(ctx context.Context) ([]wire.SandboxInfo, error)
	Get(ctx context.Context, name string) (wire.SandboxInfo, error)
	Sessions(ctx context.Context, sandboxName string) ([]wire.SessionInfo, error)
	// Events streams events until ctx ends (see client.Client.Events).
	Events(ctx context.Context, q wire.EventsQuery, fn func(wire.Event) error) error
	Transcript(ctx context.Context, sandboxName, name string) ([]wire.TranscriptEntry, error)
	Start(ctx context.Context, name string) (wire.SandboxInfo, error)
	Stop(ctx context.Context, name string) (wire.SandboxInfo, error)
	// Remove removes a sandbox after its final snapshot, returned (nil when none was
	// taken: a sandbox its backend lost).
	Remove(ctx context.Context, name string, req wire.RemoveRequest, progress func(string)) (*wire.SnapshotManifest, error)
	RemoveSession(ctx context.Context, sandboxName, name string) error
	RestartSession(ctx context.Context, sandboxName, name string) (wire.SessionInfo, error)
	SendToSession(ctx context.Context, sandboxName, name, text string) error
	CreateSession(ctx context.Context, sandboxName string, req wire.SessionCreateRequest, wait time.Duration) (wire.SessionInfo, error)
	WriteFile(ctx context.Context, name, p string, mode uint32, r io.Reader) error
	Doctor(ctx context.Context) (wire.Doctor, error)
	// Exec runs a process in a sandbox: the preview reads a session's screen with it
	// when its agent keeps no transcript paddock reads.
	Exec(ctx context.Context, name string, req wire.ExecRequest, eio wire.ExecIO) (int, error)
	// Runs and Run read the runs of paddock's own agent, shown beside the sessions.
	Runs(ctx context.Context, sandboxName string) ([]wire.Run, error)
	Run(ctx context.Context, id string) (wire.RunDetail, error)
	CancelRun(ctx context.Context, id string) (wire.Run, error)
	// Tasks, Queue, LandTask, ReviewAttempt and DropEntry are the tasks view's (T).
	Tasks(ctx context.Context) ([]wire.Task, error)
	Queue(ctx context.Context, task string) ([]wire.QueueEntry, error)
	LandTask(ctx context.Context, name string, req wire.LandRequest) (wire.QueueEntry, error)
	ReviewAttempt(ctx context.Context, name string, n int, req wire.ReviewRequest) (wire.Attempt, error)
	DropEntry(ctx context.Context, id int64) (wire.QueueEntry, error)
	// Checkpoints, CheckpointDiff, Rewind and Fork are the timeline's (t): a session's
	// checkpoints, what one changed (from and to are checkpoint refs, "#SEQ"), the session
	// put back to one, a new sandbox made from one.
	Checkpoints(ctx context.Context, sandboxName, session string) ([]wire.Checkpoint, error)
	CheckpointDiff(ctx context.Context, sandboxName, session, from, to string, stat bool) (string, error)
	Rewind(ctx context.Context, sandboxName, session string, req wire.RewindRequest) (wire.RewindResult, error)
	Fork(ctx context.Context, sandboxName string, req wire.ForkRequest, progress func(string)) (wire.ForkResult, error)
}

var _ Daemon = (*client.Client)(nil)

// Options configure the TUI.
type Options struct {
	Daemon Daemon
	// Command returns a paddock command line (argv after the program name) ready to run:
	// attach is `chat SANDBOX/SESSION`, sync `sync SANDBOX`, diff `diff SANDBOX`, a new
	// sandbox `up ...`.
	Command func(ctx context.Context, args ...string) *exec.Cmd
	// LookPath says whether a program is on the host's PATH (the dialog checks agent CLIs
	// for backends that run the host's /usr); nil uses exec.LookPath.
	LookPath func(string) (string, error)
	// Cwd is where the new-session dialog's project path starts.
	Cwd string
}

// Run shows the TUI on the terminal in and out until the user quits.
func Run(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	m := New(ctx, opts)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out))
	_, err := p.Run()
	m.Close()
	if ctx.Err() != nil {
		return nil // ended by a signal: the terminal is restored, nothing to report
	}
	return err
}
