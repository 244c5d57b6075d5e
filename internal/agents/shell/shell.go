// Package shell adapts any command: a session that runs a command line (or a login
// shell) in tmux, with no conversation to resume.
package shell

import (
	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Adapter{}) }

// Adapter runs a command.
type Adapter struct{}

var _ agents.Adapter = Adapter{}

// Name implements agents.Adapter.
func (Adapter) Name() string { return "shell" }

// Binary implements agents.Adapter.
func (Adapter) Binary() string { return "sh" }

// Install implements agents.Adapter.
func (Adapter) Install() string { return "" }

// Reports implements agents.Adapter.
func (Adapter) Reports() agents.Reports { return agents.Reports{} }

// StatusSource implements agents.Adapter.
func (Adapter) StatusSource() string { return "the process: running until it exits" }

// Files implements agents.Adapter.
func (Adapter) Files(agents.Session) []agents.File { return nil }

// Launch runs the command, or a login shell.
func (Adapter) Launch(s agents.Session) []string {
	if s.Command == "" {
		return []string{"bash", "-l"}
	}
	return []string{"sh", "-c", s.Command}
}

// Resume runs the command again: a command has no conversation.
func (a Adapter) Resume(s agents.Session) []string { return a.Launch(s) }

// Env implements agents.Adapter.
func (Adapter) Env(agents.Session) []string { return nil }

// Ask implements agents.Adapter: a command cannot be asked.
func (Adapter) Ask(agents.Session, string) []string { return nil }

// Answer implements agents.Adapter.
func (Adapter) Answer([]byte) (string, string, error) { return "", "", nil }

// Transcript implements agents.Adapter.
func (Adapter) Transcript(agents.Session) string { return "" }

// Parse implements agents.Adapter.
func (Adapter) Parse() func([]byte) ([]transcript.Entry, error) { return nil }

// ChoosesID implements agents.Adapter.
func (Adapter) ChoosesID() bool { return false }

// Fork implements agents.Adapter: a shell cannot continue a copy of a conversation.
func (Adapter) Fork(agents.Session, string) []string { return nil }
