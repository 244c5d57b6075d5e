package wire

import "time"

// The kinds of a checkpoint (Checkpoint.Kind).
const (
	CheckpointTurn   = "turn"   // taken when a session's agent ended a turn
	CheckpointManual = "manual" // taken by hand (paddock checkpoint)
	CheckpointRewind = "rewind" // the state a rewind left, kept so that the rewind can be undone
)

// Checkpoint is the workspace of a sandbox and one session's conversation as they were
// at one moment: the end of an agent's turn, or a checkpoint taken by hand. Its files
// are a git commit in the sandbox's own repository (refs/paddock/checkpoints/SEQ), made
// with an index of its own, so neither the agent's index nor its branches move; content
// addressed, so a checkpoint stores only what changed since the one before.
type Checkpoint struct {
	// Seq numbers the sandbox's checkpoints, 1 for its first, never reused.
	Seq     int    `json:"seq"`
	Sandbox string `json:"sandbox"`
	// Session is the session whose conversation the checkpoint holds; empty for one
	// taken by hand in a sandbox with no session.
	Session string `json:"session,omitempty"`
	// Turn is the turn of Session's conversation the checkpoint was taken after: 1 for
	// its first. After a rewind to turn N, the next turn is N+1 again; the newest
	// checkpoint of a turn is that turn's.
	Turn int    `json:"turn,omitempty"`
	Kind string `json:"kind"`
	// Name is given by hand (or to a rewind's undo point); a named checkpoint is never
	// pruned.
	Name string    `json:"name,omitempty"`
	Time time.Time `json:"time"`
	// Commit is the checkpoint's commit in the sandbox's repository: its tree is the
	// workspace (tracked, untracked and changed files; ignored ones left out).
	Commit string `json:"commit"`
	// Tree is the tree of Commit: the workspace's files.
	Tree string `json:"tree,omitempty"`
	// Head and Branch are the repository's HEAD and checked-out branch at the checkpoint
	// (Branch empty when detached): a rewind puts them back too.
	Head   string `json:"head,omitempty"`
	Branch string `json:"branch,omitempty"`
	// Files, Added and Deleted are what changed since the checkpoint before it (of any
	// session): files touched, lines added and deleted.
	Files   int `json:"files"`
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
	// Bytes is what the checkpoint added to the sandbox's repository, about: the size of
	// the files it stored that no earlier checkpoint held.
	Bytes int64 `json:"bytes"`
	// RewoundTo, on a rewind's undo point (kind rewind), is the Seq of the checkpoint the
	// rewind went to: the session's next turn is that checkpoint's Turn + 1.
	RewoundTo int `json:"rewound_to,omitempty"`
	// Prompt is the message that started the turn (its first words in a listing).
	Prompt string `json:"prompt,omitempty"`
	// Conversation is the session's conversation at the checkpoint; nil when there is
	// none (no session, or an agent whose conversation paddock cannot read).
	Conversation *Conversation `json:"conversation,omitempty"`
}

// Conversation is where a session's conversation stood at a checkpoint.
type Conversation struct {
	Agent string `json:"agent"`
	// ResumeID is the id the agent resumes the conversation by.
	ResumeID string `json:"resume_id,omitempty"`
	// Path is the transcript's file in the sandbox; Blob the git blob in the sandbox's
	// repository holding its content at the checkpoint; Size its length in bytes.
	Path string `json:"path"`
	Blob string `json:"blob"`
	Size int64  `json:"size"`
}

// CheckpointRequest is the body of POST /v1/sandboxes/{name}/checkpoints.
type CheckpointRequest struct {
	// Session names the session whose conversation the checkpoint holds; empty: the
	// sandbox's only session, if it has one.
	Session string `json:"session,omitempty"`
	Name    string `json:"name,omitempty"`
}

// RewindRequest is the body of POST /v1/sandboxes/{name}/sessions/{session}/rewind.
type RewindRequest struct {
	// To is the checkpoint to go back to: a turn number of the session ("3"), a
	// checkpoint's sequence number ("#12") or a checkpoint's name.
	To string `json:"to"`
}

// RewindResult is the answer to a rewind.
type RewindResult struct {
	// To is the checkpoint the workspace and conversation were put back to.
	To Checkpoint `json:"to"`
	// Undo is the checkpoint of the state the rewind left (named), which a rewind to it
	// puts back.
	Undo Checkpoint `json:"undo"`
	// Files is how many of the workspace's files the rewind wrote or deleted.
	Files int `json:"files"`
	// Fresh says the agent could not resume its conversation at that point and started
	// a new one with the transcript up to it as context.
	Fresh bool `json:"fresh,omitempty"`
	// Note says what the user should know (Fresh's reason).
	Note string `json:"note,omitempty"`
}

// BisectRequest is the body of POST /v1/sandboxes/{name}/sessions/{session}/bisect.
type BisectRequest struct {
	// Check is a shell command run in a scratch copy of a checkpoint's workspace;
	// exit 0 is good.
	Check string `json:"check"`
}

// BisectStep is one checkpoint the check ran on.
type BisectStep struct {
	Turn   int           `json:"turn"`
	Seq    int           `json:"seq"`
	Exit   int           `json:"exit"`
	Output string        `json:"output,omitempty"` // its last 2 KB
	Took   time.Duration `json:"took"`
}

// BisectResult is the answer to a bisect.
type BisectResult struct {
	// FirstBad is the first turn after which the check fails; Good the turn before it
	// (nil when even the first turn fails: the check fails from the start).
	FirstBad *Checkpoint `json:"first_bad,omitempty"`
	Good     *Checkpoint `json:"good,omitempty"`
	// Diff is what FirstBad's turn changed (git diff, cut at 60 KB); DiffStat its
	// summary (git diff --stat). With Good nil, the change is from the commit HEAD was
	// at when FirstBad was taken.
	Diff     string       `json:"diff,omitempty"`
	DiffStat string       `json:"diff_stat,omitempty"`
	Steps    []BisectStep `json:"steps"`
	// Note says what the result means when it is not plain: there is no first bad turn
	// (the check passes at the newest turn), or the check fails from the first turn.
	Note string `json:"note,omitempty"`
}

// ForkRequest is the body of POST /v1/sandboxes/{name}/fork.
type ForkRequest struct {
	// Session is the session whose conversation the fork takes; empty: every session
	// of the sandbox, at its newest checkpoint (or the checkpoint At names).
	Session string `json:"session,omitempty"`
	// At is the checkpoint, as RewindRequest.To; empty: one taken now.
	At string `json:"at,omitempty"`
	// New is the new sandbox's name; with Count > 1, NEW-1 … NEW-K.
	New     string `json:"new"`
	Backend string `json:"backend,omitempty"`
	Count   int    `json:"count,omitempty"`
}

// ForkResult is the answer to a fork.
type ForkResult struct {
	From      Checkpoint `json:"from"`
	Sandboxes []string   `json:"sandboxes"`
	// Sessions are the sessions started in each new sandbox, on the conversation.
	Sessions []string `json:"sessions,omitempty"`
}
