// Package agents defines what paddock needs to know about each coding agent CLI, and the
// registry of the adapters (one package each: claude, codex, gemini, ...).
//
// An adapter knows how to start its agent with every permission on, as the sandbox's
// non-root user, straight into its prompt (the first-run files that skip onboarding,
// trust and API-key dialogs), how to resume a conversation, how to add paddock's context
// to the system prompt, how its hooks report status through `paddock agent notify`,
// where its transcript lives, and how to ask it one question non-interactively.
package agents

import (
	"fmt"
	"sort"
	"sync"

	"github.com/paddockhq/paddock/internal/transcript"
)

// Session is what an adapter is told about the conversation it starts.
type Session struct {
	// Name is the session's name, also set as PADDOCK_SESSION in its environment.
	Name string
	// ResumeID is the agent's conversation id: chosen by paddock before the first launch
	// when the agent accepts one (claude --session-id), else learnt from the agent.
	ResumeID string
	// Dir is the working directory, /workspace or a worktree.
	Dir string
	// Command is the command line of a shell session.
	Command string
	// Token is the sandbox's placeholder API key (what the agent CLIs present to the
	// credential proxy), for agents that want it approved in a settings file.
	Token string
	// CredsBase is the credential proxy's base URL inside the sandbox, e.g. http://127.0.0.1:4180.
	CredsBase string
	// Fresh is true when the conversation has no transcript yet (nothing to resume).
	Fresh bool
}

// File is a file an adapter wants in the sandbox before its agent starts.
type File struct {
	// Path is absolute inside the sandbox, e.g. /home/agent/.claude.json.
	Path string
	// Merge, for a JSON file, is merged into the existing object (objects recursively,
	// other values replaced); Content is ignored then.
	Merge   map[string]any
	Content []byte
	Mode    uint32
}

// Adapter describes one agent CLI. Implementations are stateless.
type Adapter interface {
	// Name is the adapter's name: claude, codex, gemini, goose, aider, opencode, shell.
	Name() string
	// Binary is the command that must be on the sandbox's PATH.
	Binary() string
	// Install says how to get the agent, e.g. "npm install -g @anthropic-ai/claude-code".
	Install() string
	// Files are written before the first launch (and again before each launch).
	Files(s Session) []File
	// Launch is the argv of a new interactive conversation; Resume continues s.ResumeID
	// (or the latest conversation when the agent has no ids).
	Launch(s Session) []string
	Resume(s Session) []string
	// Env is added to the agent's environment.
	Env(s Session) []string
	// Ask is the argv that sends prompt to the conversation non-interactively and prints
	// the answer; nil when the agent has no such mode.
	Ask(s Session, prompt string) []string
	// Answer extracts the final answer (and the conversation id, if it says one) from
	// Ask's output.
	Answer(output []byte) (text, resumeID string, err error)
	// Transcript is the path of the conversation's transcript inside the sandbox, or "";
	// it may be a shell glob (the agent names the file itself), of which the newest match
	// is the transcript.
	Transcript(s Session) string
	// Parse reads a transcript into the common schema; nil when paddock reads none of
	// this agent's.
	Parse() func(data []byte) ([]transcript.Entry, error)
	// ChoosesID is true when the agent takes a conversation id paddock chooses before the
	// first launch (claude --session-id); otherwise the id is learnt from its hooks.
	ChoosesID() bool
	// Fork is the argv of a new conversation that continues a copy of conversation
	// from (s.ResumeID names the copy); nil when the agent cannot fork one.
	Fork(s Session, from string) []string
	// StatusSource says, in words, how the session's status is known.
	StatusSource() string
	// Reports says which statuses the agent's own hooks report through
	// `paddock agent notify`; what they do not report comes from the process.
	Reports() Reports
}

// Reports lists what an agent's hooks report.
type Reports struct {
	// Ready: a hook runs when the agent is at its prompt after starting.
	Ready bool
	// Idle: a hook runs when the agent finishes a turn.
	Idle bool
}

var (
	mu       sync.RWMutex
	registry = map[string]Adapter{}
)

// Register adds an adapter; a duplicate name panics at start-up.
func Register(a Adapter) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[a.Name()]; dup {
		panic("agents: duplicate adapter " + a.Name())
	}
	registry[a.Name()] = a
}

// Get returns the adapter of that name.
func Get(name string) (Adapter, error) {
	mu.RLock()
	defer mu.RUnlock()
	a, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown agent %q (known: %v)", name, namesLocked())
	}
	return a, nil
}

// Names lists the registered adapters, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NotifyCommand is what an agent's hook runs to report a status: the guest agent binary
// reads PADDOCK_SESSION from the environment the session was started with.
func NotifyCommand(status string) string {
	return "/opt/paddock/bin/paddock agent notify --status " + status
}

// SystemPrompt is the context paddock adds to every agent's system prompt.
const SystemPrompt = `You are running inside a paddock sandbox: an isolated Linux environment where you have every permission, as the user "agent".
/workspace is a git checkout of the user's repository; the user pulls your work from it with git, so commit your changes on a branch with clear messages.
Files you want kept but not committed (reports, build outputs) go in /workspace/deliverables.
The network is closed: HTTP and HTTPS go through an allowlist proxy (package registries and GitHub are allowed). If a request is refused with 403, tell the user which host you need; they can allow it with "paddock net allow HOST --sandbox NAME".`
