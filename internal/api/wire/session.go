package wire

import (
	"encoding/json"
	"time"

	"github.com/paddockhq/paddock/internal/inside"
)

// SessionInfo is a session as the user sees it.
type SessionInfo struct {
	Sandbox string `json:"sandbox"`
	Name    string `json:"name"`
	Agent   string `json:"agent"`
	// Status is working, waiting (for the human), idle, running (no hook says more),
	// starting, exited, stopped (its sandbox is stopped; starting it resumes the
	// session) or error.
	Status string `json:"status"`
	// Stale says Status is as last read: the sandbox did not answer the listing in
	// time (Detail says when that was); a read goes on for the next listing.
	Stale        bool      `json:"stale,omitempty"`
	Detail       string    `json:"detail,omitempty"`
	ResumeID     string    `json:"resume_id,omitempty"`
	Messages     int       `json:"messages"`
	LastActivity time.Time `json:"last_activity,omitzero"`
	CreatedAt    time.Time `json:"created_at"`
	// Usage is what the session's model calls through the credential proxy used, with
	// their estimated cost; nil when none is known.
	Usage *UsageSum `json:"usage,omitempty"`
	// NeedsYou says the agent waits for the user (an answer or a permission): its status
	// is waiting. It is set whenever Info is written as JSON.
	NeedsYou bool `json:"needs_you"`
}

// MarshalJSON writes the session with NeedsYou following its status.
func (in SessionInfo) MarshalJSON() ([]byte, error) {
	type plain SessionInfo
	p := plain(in)
	p.NeedsYou = in.Status == "waiting"
	return json.Marshal(p)
}

// CreateRequest describes a new session.
type SessionCreateRequest struct {
	Name  string `json:"name"`
	Agent string `json:"agent"`
	// Command is the command line of a shell session.
	Command string `json:"command,omitempty"`
	// Worktree binds the session to /workspace/.worktrees/WORKTREE (see `paddock worktree add`).
	Worktree string `json:"worktree,omitempty"`
	// ForkOf names a session of the same sandbox whose conversation the new one continues
	// a copy of (its agent, working directory and history), where the agent can fork.
	ForkOf string `json:"fork_of,omitempty"`
	// Disposable tells the agent its sandbox is made to be thrown away, so it may do
	// anything there without asking ("Just do it"), through its memory file.
	Disposable bool `json:"disposable,omitempty"`
	// Prompt is the agent's first message, typed into the session once the agent is at
	// its prompt, as a person would: it starts working at once, and the conversation in
	// tmux holds it. Not for a shell session.
	Prompt string `json:"prompt,omitempty"`
}

// SessionText is the body of the send and ask routes, and ask's answer.
type SessionText struct {
	Text string `json:"text"`
}

// RenameRequest is the body of the rename route.
type RenameRequest struct {
	To string `json:"to"`
}

// WorktreeDir is where a worktree of branch lives inside the sandbox.
func WorktreeDir(branch string) string { return inside.Workspace + "/.worktrees/" + branch }

// AttachArgv is the command that attaches a terminal to a session (or, with name "",
// to the sandbox's tmux server and its sessions). Detaching leaves everything running.
func AttachArgv(name string) []string {
	argv := []string{"tmux", "-S", SessionSocket, "attach-session"}
	if name != "" {
		argv = append(argv, "-t", "="+name)
	}
	return argv
}
