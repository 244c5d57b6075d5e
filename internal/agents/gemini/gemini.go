// Package gemini adapts the Gemini CLI (npm @google/gemini-cli).
package gemini

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Adapter{}) }

// Adapter is the Gemini CLI.
type Adapter struct{}

var _ agents.Adapter = Adapter{}

// Model is passed with -m, which also skips the CLI's routing call to a small model.
const Model = "gemini-2.5-pro"

// Name implements agents.Adapter.
func (Adapter) Name() string { return "gemini" }

// Binary implements agents.Adapter.
func (Adapter) Binary() string { return "gemini" }

// Install implements agents.Adapter.
func (Adapter) Install() string { return "npm install -g @google/gemini-cli" }

// Reports implements agents.Adapter.
func (Adapter) Reports() agents.Reports { return agents.Reports{} }

// StatusSource implements agents.Adapter.
func (Adapter) StatusSource() string {
	return "no hook is installed yet: the session shows running until its process exits"
}

// Files select API-key auth, trust /workspace and add paddock's context.
func (Adapter) Files(s agents.Session) []agents.File {
	return []agents.File{
		{Path: inside.Home + "/.gemini/settings.json", Mode: 0o600, Merge: map[string]any{
			"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		}},
		{Path: inside.Home + "/.gemini/trustedFolders.json", Mode: 0o600, Merge: map[string]any{s.Dir: "TRUST_FOLDER"}},
		{Path: inside.Home + "/.gemini/GEMINI.md", Content: []byte(agents.SystemPrompt + "\n"), Mode: 0o644},
	}
}

// Launch implements agents.Adapter.
func (Adapter) Launch(s agents.Session) []string { return []string{"gemini", "-m", Model, "-y"} }

// Resume implements agents.Adapter.
func (Adapter) Resume(s agents.Session) []string {
	return []string{"gemini", "-m", Model, "-y", "-r", "latest"}
}

// Env implements agents.Adapter.
func (Adapter) Env(s agents.Session) []string { return nil }

// Ask implements agents.Adapter.
func (Adapter) Ask(s agents.Session, prompt string) []string {
	return []string{"gemini", "-m", Model, "-y", "-r", "latest", "-o", "json", "-p", prompt}
}

// Answer reads the JSON output's response.
func (Adapter) Answer(output []byte) (string, string, error) {
	var out struct {
		Response string `json:"response"`
	}
	if err := json.Unmarshal(output, &out); err != nil || out.Response == "" {
		return "", "", errors.New("gemini printed no response")
	}
	return out.Response, "", nil
}

// Transcript implements agents.Adapter.
func (Adapter) Transcript(s agents.Session) string {
	return inside.Home + "/.gemini/tmp/*/chats/session-*.jsonl"
}

// Parse implements agents.Adapter.
func (Adapter) Parse() func([]byte) ([]transcript.Entry, error) {
	return func(b []byte) ([]transcript.Entry, error) { return transcript.ParseGemini(bytes.NewReader(b)) }
}

// ChoosesID implements agents.Adapter.
func (Adapter) ChoosesID() bool { return false }

// Fork implements agents.Adapter: Gemini CLI cannot continue a copy of a conversation.
func (Adapter) Fork(agents.Session, string) []string { return nil }
