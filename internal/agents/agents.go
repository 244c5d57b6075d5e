// Package agents describes the coding agent CLIs paddock runs (Claude Code, Codex,
// Gemini CLI, Qwen Code, OpenCode, goose, Aider, any command), and keeps their registry.
//
// An agent is a description, one small package each (claude, codex, gemini, ...): the
// command that starts it with every permission on, as the sandbox's non-root user,
// straight into its prompt; the first-run files that skip its onboarding, trust and
// API-key dialogs; how it resumes, forks and answers one message non-interactively;
// where its transcript lives and how it parses; how its hooks report status through
// `paddock guest notify`; and what paddock's tests run of it for real. Functions appear
// only where agents really differ (their settings files, their non-interactive output).
package agents

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/inside"
)

// Default is the agent of a session that names none.
const Default = wire.DefaultAgent

// Agent describes one agent CLI. Argument lists may hold placeholders, each replaced
// once, whole words or inside a word: {id} the conversation's id, {from} the id of the
// conversation a fork copies, {prompt} the message of Ask, {system} paddock's context
// (SystemPrompt), {dir} the working directory, {name} the session's name, {command} a
// shell session's command line (a login shell when it has none).
type Agent struct {
	// Name is how a user chooses the agent: claude, codex, gemini...
	Name string
	// Binary is the command that must be on the sandbox's PATH.
	Binary string
	// Package is the npm package and version paddock's image installs and its tests run
	// ("" for agents that do not come from npm); NeedsNode when its command is a node script.
	Package   string
	NeedsNode bool
	// Install says how to get the agent when it is missing.
	Install string
	// Tested says what paddock's own tests run of this agent, for real or not, and why.
	Tested string
	// Hosts are the provider's API hosts, opened in the egress allowlist of a sandbox made
	// for this agent (the credential proxy's routes need none of them).
	Hosts []string
	// Provider is the credential proxy's provider whose key the agent's model calls need
	// ("anthropic"); empty for an agent that can use several, or none.
	Provider string
	// Login is the subscription login (`paddock login NAME`: "claude", "codex") the agent
	// uses instead of Provider's key while the daemon holds it; "" for none. LoginEnv is
	// added to its environment then.
	Login    string
	LoginEnv []string

	// Command starts every run of the agent; New, Resume or Fork follows it.
	Command []string
	// New starts a new conversation (under {id} when ChoosesID).
	New []string
	// Resume continues conversation {id}. An agent that learns its id from its hooks
	// starts a new conversation instead until it has reported one.
	Resume []string
	// Fork starts conversation {id} as a copy of {from}; nil when the agent cannot fork.
	Fork []string
	// Ask sends {prompt} to conversation {id} and prints the answer, for Answer to read;
	// AskNew does so for a conversation with no transcript yet (Ask when nil). Only for
	// an agent without Parse or an Idle hook, and only while its session's process is not
	// running (which would not see the exchange): with both, paddock types the message
	// into the session and reads the answer from the transcript, so that the session
	// holds one conversation.
	Ask, AskNew []string
	// EnterAfter is how long after a pasted message shows on its screen the agent takes
	// the Enter that submits it (0: 100 ms).
	EnterAfter time.Duration
	// AskOnStdin sends Ask's message on the agent's stdin instead of as {prompt}.
	AskOnStdin bool
	// Answer reads the final answer (and the conversation's id, when it says one) from
	// Ask's output.
	Answer func(output []byte) (text, id string, err error)
	// ChoosesID is true when the agent takes an id paddock chooses before its first
	// launch; otherwise the id is learnt from its hooks, and {id} may be empty.
	ChoosesID bool
	// Env is added to the agent's environment.
	Env []string
	// Files are written before every launch (JSON settings merged into what is there).
	Files func(s Session) []File
	// Memory is the file the agent reads into its context at start, "" when none:
	// paddock's context goes there as a section (unless Command passes {system}), and so
	// does a note that the sandbox is disposable.
	Memory string
	// Transcript locates a conversation's transcript inside the sandbox: a path with
	// placeholders ({id}, {id8} its first 8 characters, {dir}, {dir-} the directory with
	// every "/" made "-"), or a
	// shell glob whose newest match is it; "" when paddock reads none. Parse reads it.
	Transcript string
	// TranscriptCommand, for an agent that keeps its conversations in a database, prints
	// one in a form Parse reads (run in the sandbox, as the agent's user); used instead of
	// Transcript, and not for listings (it costs a process).
	TranscriptCommand []string
	Parse             func(r io.Reader) ([]wire.TranscriptEntry, error)
	// State are the directories (placeholders as in Transcript) where the agent keeps its
	// conversations, every transcript and the chains it makes when it resumes: a snapshot
	// keeps them whole, and a restore puts them back, so the conversations resume.
	State []string
	// Status says what the agent's own hooks report, and in words how status is known.
	Status Status
}

// Status is what an agent's hooks report through `paddock guest notify`; what they do
// not report comes from its process (running until it exits).
type Status struct {
	// Ready: a hook runs when the agent is at its prompt after starting.
	Ready bool
	// Idle: a hook runs when the agent finishes a turn.
	Idle bool
	// Source says, in words, how the session's status is known.
	Source string
}

// Session is what an agent is told about the conversation it starts.
type Session struct {
	// Name is the session's name, also set as PADDOCK_SESSION in its environment.
	Name string
	// ResumeID is the agent's conversation id: chosen by paddock before the first launch
	// when the agent accepts one, else learnt from the agent ("" until then).
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
	// LoginFile, when the daemon holds the agent's subscription login (Agent.Login) and
	// the agent keeps that login in a file, is that file with placeholders only (Codex's
	// auth.json); nil otherwise.
	LoginFile []byte
	// ProxyCA is the certificate (PEM) of the CA that signs the credential proxy's
	// certificate, for an agent that reaches the proxy over HTTPS; nil when it speaks
	// plain HTTP only.
	ProxyCA []byte
	// Fresh is true when the conversation has no transcript yet (nothing to resume).
	Fresh bool
	// Machine is true when the sandbox is a whole VM of its own (the vagrant backend):
	// the agent is told MachinePrompt instead of SystemPrompt.
	Machine bool
}

// system is the context paddock gives the agent of a session.
func (s Session) system() string {
	if s.Machine {
		return MachinePrompt
	}
	return SystemPrompt
}

// File is a file an agent wants in the sandbox before it starts.
type File struct {
	// Path is absolute inside the sandbox, e.g. /home/agent/.claude.json.
	Path string
	// Merge, for a JSON file, is merged into the existing object (objects recursively,
	// other values replaced); Content is ignored then.
	Merge map[string]any
	// Section, for a text file, names the part of it Content is: replaced between its
	// markers when there, appended otherwise, and the rest of the file kept.
	Section string
	Content []byte
	Mode    uint32
}

// LaunchArgv is the argv of a new conversation.
func (a *Agent) LaunchArgv(s Session) []string { return a.argv(s, a.New, "") }

// ResumeArgv is the argv that continues s's conversation, or starts one when there is
// none to continue (an id not yet learnt, or no transcript yet).
func (a *Agent) ResumeArgv(s Session) []string {
	if s.Fresh || a.Resume == nil || (!a.ChoosesID && s.ResumeID == "" && usesID(a.Resume)) {
		return a.LaunchArgv(s)
	}
	return a.argv(s, a.Resume, "")
}

// ForkArgv is the argv of conversation s.ResumeID as a copy of from; nil when the agent
// cannot fork.
func (a *Agent) ForkArgv(s Session, from string) []string {
	if !a.CanFork() {
		return nil
	}
	return a.expand(append(append([]string(nil), a.Command...), a.Fork...), s, from, "")
}

// CanFork reports whether the agent can start a copy of a conversation under a new id.
func (a *Agent) CanFork() bool { return a.Fork != nil && a.ChoosesID }

// AskArgv is the argv that sends prompt non-interactively; nil when the agent has none.
func (a *Agent) AskArgv(s Session, prompt string) []string {
	args := a.Ask
	if a.AskNew != nil && (s.Fresh || (!a.ChoosesID && s.ResumeID == "")) {
		args = a.AskNew // no conversation yet, or none whose id is known
	}
	if args == nil {
		return nil
	}
	return a.argv(s, args, prompt)
}

// TranscriptPath is where s's transcript is (maybe a glob), "" when there is none to
// read: the agent keeps none, or its id is not known yet.
func (a *Agent) TranscriptPath(s Session) string {
	if a.Transcript == "" || a.Parse == nil || (s.ResumeID == "" && strings.Contains(a.Transcript, "{id")) {
		return ""
	}
	return a.expand([]string{a.Transcript}, s, "", "")[0]
}

// StateDirs are the directories of the agent's conversations, inside the sandbox.
func (a *Agent) StateDirs() []string { return a.expand(a.State, Session{}, "", "") }

// TranscriptArgv is the command that prints s's transcript, nil when the agent has none
// or its id is not known yet.
func (a *Agent) TranscriptArgv(s Session) []string {
	if a.TranscriptCommand == nil || a.Parse == nil || (s.ResumeID == "" && usesID(a.TranscriptCommand)) {
		return nil
	}
	return a.expand(a.TranscriptCommand, s, "", "")
}

// PromptFiles are the files that carry paddock's context to an agent that reads it from
// its memory file (not its command line).
func (a *Agent) PromptFiles(s Session) []File {
	if a.Memory == "" || passes(a.Command, "{system}") {
		return nil
	}
	return []File{{Path: a.Memory, Section: "paddock", Content: []byte(s.system() + "\n"), Mode: 0o644}}
}

// DisposableFile is the section of the memory file that tells the agent its sandbox is
// disposable; false when the agent reads no memory file.
func (a *Agent) DisposableFile() (File, bool) {
	if a.Memory == "" {
		return File{}, false
	}
	return File{Path: a.Memory, Section: "paddock-disposable", Content: []byte(DisposableNote + "\n"), Mode: 0o644}, true
}

func (a *Agent) argv(s Session, args []string, prompt string) []string {
	return a.expand(append(append([]string(nil), a.Command...), args...), s, "", prompt)
}

// expand replaces the placeholders in each argument in one pass, so that a value
// holding a placeholder's spelling (a prompt saying "{id}") stays as it is.
func (a *Agent) expand(args []string, s Session, from, prompt string) []string {
	command := s.Command
	if command == "" {
		command = "exec bash -l"
	}
	r := strings.NewReplacer("{id}", s.ResumeID, "{from}", from, "{prompt}", prompt, "{system}", s.system(),
		"{id8}", s.ResumeID[:min(8, len(s.ResumeID))], "{dir-}", strings.ReplaceAll(s.Dir, "/", "-"), "{dir}", s.Dir, "{name}", s.Name, "{command}", command, "{home}", inside.Home)
	out := make([]string, len(args))
	for i, arg := range args {
		out[i] = r.Replace(arg)
	}
	return out
}

func usesID(args []string) bool { return passes(args, "{id}") }

func passes(args []string, placeholder string) bool {
	for _, arg := range args {
		if strings.Contains(arg, placeholder) {
			return true
		}
	}
	return false
}

var (
	mu       sync.RWMutex
	registry = map[string]*Agent{}
)

// Register adds an agent; a duplicate name, or a description that contradicts itself,
// panics at start-up.
func Register(a *Agent) {
	if err := a.check(); err != nil {
		panic("agents: " + a.Name + ": " + err.Error())
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[a.Name]; dup {
		panic("agents: duplicate agent " + a.Name)
	}
	registry[a.Name] = a
}

// check refuses a description the session code could not follow.
func (a *Agent) check() error {
	switch {
	case a.Name == "" || a.Binary == "" || len(a.Command) == 0:
		return fmt.Errorf("an agent needs a name, a binary and a command")
	case a.Ask != nil && a.Answer == nil:
		return fmt.Errorf("an agent with Ask needs Answer")
	case (a.Transcript == "" && a.TranscriptCommand == nil) != (a.Parse == nil):
		return fmt.Errorf("a transcript needs both its path (or command) and its parser")
	case a.ChoosesID && !usesID(a.New):
		return fmt.Errorf("an agent that takes a chosen id must be given it in New")
	}
	return nil
}

// Get returns the agent of that name.
func Get(name string) (*Agent, error) {
	mu.RLock()
	defer mu.RUnlock()
	a, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown agent %q (known: %s)", name, strings.Join(namesLocked(), ", "))
	}
	return a, nil
}

// Names lists the registered agents, sorted.
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

// NotifyCommand is what an agent's hook runs to report a status: the guest binary
// reads PADDOCK_SESSION from the environment the session was started with, and the
// hook's JSON (with the conversation's id) from its stdin. It prints nothing (Qwen Code
// adds a hook's output to the model's context) and always succeeds (exit 2 from a hook
// blocks the agent's turn in Claude Code, Gemini CLI and Qwen Code).
func NotifyCommand(status string) string {
	return inside.GuestBinary + " " + inside.GuestCommand + " notify --status " + status + " >/dev/null 2>&1 || true"
}

// Hook is an entry of the hooks settings Claude Code, Gemini CLI and Qwen Code share:
// a command that reports status, with a timeout where the agent wants one.
func Hook(status string, matcher string, timeout int) map[string]any {
	h := map[string]any{"type": "command", "command": NotifyCommand(status)}
	if timeout > 0 {
		h["timeout"] = timeout
	}
	entry := map[string]any{"hooks": []any{h}}
	if matcher != "" {
		entry["matcher"] = matcher
	}
	return entry
}

// SystemPrompt is the context paddock adds to every agent's system prompt.
const SystemPrompt = `You are running inside a paddock sandbox: an isolated Linux environment where you have every permission, as the user "agent".
/workspace is a git checkout of the user's repository; the user pulls your work from it with git, so commit your changes on a branch with clear messages.
Files you want kept but not committed (reports, build outputs) go in /workspace/deliverables.
The network is closed: HTTP and HTTPS go through an allowlist proxy (package registries and GitHub are allowed). If a request is refused with 403, tell the user which host you need; they can allow it with "paddock net allow HOST --sandbox NAME".`

// MachinePrompt is the context paddock gives an agent in a sandbox that is a whole VM.
const MachinePrompt = `You are running inside a paddock sandbox that is an isolated Ubuntu virtual machine of its own, as the user "agent" with every permission: sudo works without a password.
Docker, Node.js and git are installed; install anything else you need with sudo apt-get. Prefer Docker for services (databases, queues) over installing them on the machine.
/workspace is a git checkout of the user's repository; the user pulls your work from it with git, so commit your changes on a branch with clear messages. /vagrant is shared with the host and holds only the machine's Vagrantfile.
Files you want kept but not committed (reports, build outputs) go in /workspace/deliverables.
The machine may be destroyed and made again at any time: keep nothing of value outside /workspace.`

// DisposableNote tells an agent that its sandbox was made to be thrown away ("Just do
// it" in the TUI): it may install, change and run anything there without asking.
const DisposableNote = `# This machine is disposable

You run in a sandbox made for this task alone, and thrown away after it. Nothing you do here can harm the user's computer: install what you need, change any file, run anything, without asking first. Work until the task is done; commit your work on a branch in /workspace so the user can pull it.`

// Tail is the end of an agent's output, for an error that quotes it.
func Tail(output []byte) string {
	return strings.TrimSpace(string(output[max(0, len(output)-400):]))
}

// PrintedAnswer is the Answer of an agent whose non-interactive mode prints just its
// answer.
func PrintedAnswer(output []byte) (string, string, error) {
	text := strings.TrimSpace(string(output))
	if text == "" {
		return "", "", errors.New("the agent printed nothing")
	}
	return text, "", nil
}
