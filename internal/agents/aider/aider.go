// Package aider adapts Aider (PyPI aider-chat), which must be installed on the host
// (bwrap) or in the image.
package aider

import (
	"errors"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Adapter{}) }

// Adapter is Aider: it answers every question itself (--yes-always) and keeps its chat
// history in the workspace, from which it resumes.
type Adapter struct{}

var _ agents.Adapter = Adapter{}

// Name implements agents.Adapter.
func (Adapter) Name() string { return "aider" }

// Binary implements agents.Adapter.
func (Adapter) Binary() string { return "aider" }

// Install implements agents.Adapter.
func (Adapter) Install() string { return "pipx install aider-chat (or pip install aider-chat)" }

// Reports implements agents.Adapter.
func (Adapter) Reports() agents.Reports { return agents.Reports{} }

// StatusSource implements agents.Adapter.
func (Adapter) StatusSource() string {
	return "no hook: the session shows running until its process exits"
}

// Files implements agents.Adapter.
func (Adapter) Files(agents.Session) []agents.File {
	return []agents.File{{Path: inside.Home + "/.paddock/CONVENTIONS.md", Content: []byte(agents.SystemPrompt + "\n"), Mode: 0o644}}
}

func common() []string {
	return []string{"aider", "--yes-always", "--no-check-update", "--no-show-release-notes", "--read", inside.Home + "/.paddock/CONVENTIONS.md"}
}

// Launch implements agents.Adapter.
func (Adapter) Launch(agents.Session) []string { return common() }

// Resume implements agents.Adapter.
func (Adapter) Resume(agents.Session) []string { return append(common(), "--restore-chat-history") }

// Env implements agents.Adapter.
func (Adapter) Env(agents.Session) []string { return nil }

// Ask implements agents.Adapter.
func (Adapter) Ask(_ agents.Session, prompt string) []string {
	return append(common(), "--restore-chat-history", "--message", prompt)
}

// Answer returns aider's printed output.
func (Adapter) Answer(output []byte) (string, string, error) {
	text := strings.TrimSpace(string(output))
	if text == "" {
		return "", "", errors.New("aider printed nothing")
	}
	return text, "", nil
}

// Transcript implements agents.Adapter.
func (Adapter) Transcript(agents.Session) string { return inside.Workspace + "/.aider.chat.history.md" }

// Parse implements agents.Adapter.
func (Adapter) Parse() func([]byte) ([]transcript.Entry, error) { return nil }

// ChoosesID implements agents.Adapter.
func (Adapter) ChoosesID() bool { return false }

// Fork implements agents.Adapter: Aider cannot continue a copy of a conversation.
func (Adapter) Fork(agents.Session, string) []string { return nil }
