// Package opencode adapts OpenCode (npm opencode-ai).
package opencode

import (
	"errors"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Adapter{}) }

// Adapter is OpenCode.
type Adapter struct{}

var _ agents.Adapter = Adapter{}

// Name implements agents.Adapter.
func (Adapter) Name() string { return "opencode" }

// Binary implements agents.Adapter.
func (Adapter) Binary() string { return "opencode" }

// Install implements agents.Adapter.
func (Adapter) Install() string { return "npm install -g opencode-ai" }

// Reports implements agents.Adapter.
func (Adapter) Reports() agents.Reports { return agents.Reports{} }

// StatusSource implements agents.Adapter.
func (Adapter) StatusSource() string {
	return "no hook: the session shows running until its process exits"
}

// Files implements agents.Adapter.
func (Adapter) Files(agents.Session) []agents.File {
	return []agents.File{{Path: inside.Home + "/.config/opencode/AGENTS.md", Content: []byte(agents.SystemPrompt + "\n"), Mode: 0o644}}
}

// Launch implements agents.Adapter.
func (Adapter) Launch(agents.Session) []string { return []string{"opencode"} }

// Resume implements agents.Adapter.
func (Adapter) Resume(agents.Session) []string { return []string{"opencode", "--continue"} }

// Env implements agents.Adapter.
func (Adapter) Env(agents.Session) []string { return nil }

// Ask implements agents.Adapter.
func (Adapter) Ask(_ agents.Session, prompt string) []string {
	return []string{"opencode", "run", "--continue", prompt}
}

// Answer returns OpenCode's printed output.
func (Adapter) Answer(output []byte) (string, string, error) {
	text := strings.TrimSpace(string(output))
	if text == "" {
		return "", "", errors.New("opencode printed nothing")
	}
	return text, "", nil
}

// Transcript implements agents.Adapter.
func (Adapter) Transcript(agents.Session) string { return "" }

// Parse implements agents.Adapter.
func (Adapter) Parse() func([]byte) ([]transcript.Entry, error) { return nil }

// ChoosesID implements agents.Adapter.
func (Adapter) ChoosesID() bool { return false }

// Fork implements agents.Adapter: OpenCode cannot continue a copy of a conversation.
func (Adapter) Fork(agents.Session, string) []string { return nil }
