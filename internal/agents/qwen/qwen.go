// Package qwen adapts Qwen Code (npm @qwen-code/qwen-code), pointed at an OpenAI-compatible
// endpoint: the credential proxy's OpenAI route, spoken to with the Responses API.
package qwen

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Adapter{}) }

// Adapter is Qwen Code.
type Adapter struct{}

var _ agents.Adapter = Adapter{}

// Model is the model Qwen Code asks the OpenAI-compatible endpoint for.
const Model = "gpt-5.5"

// Name implements agents.Adapter.
func (Adapter) Name() string { return "qwen" }

// Binary implements agents.Adapter.
func (Adapter) Binary() string { return "qwen" }

// Install implements agents.Adapter.
func (Adapter) Install() string { return "npm install -g @qwen-code/qwen-code" }

// Reports implements agents.Adapter.
func (Adapter) Reports() agents.Reports { return agents.Reports{} }

// StatusSource implements agents.Adapter.
func (Adapter) StatusSource() string {
	return "no hook is installed yet: the session shows running until its process exits"
}

// Files add paddock's context to Qwen Code's memory file and accept its defaults.
func (Adapter) Files(s agents.Session) []agents.File {
	return []agents.File{
		{Path: inside.Home + "/.qwen/settings.json", Mode: 0o600, Merge: map[string]any{
			"security": map[string]any{"auth": map[string]any{"selectedType": "openai-responses"}},
			"model":    map[string]any{"name": Model},
		}},
		{Path: inside.Home + "/.qwen/QWEN.md", Content: []byte(agents.SystemPrompt + "\n"), Mode: 0o644},
	}
}

func common() []string {
	return []string{"qwen", "--auth-type", "openai-responses", "-m", Model, "--approval-mode", "yolo"}
}

// Launch starts a conversation under the id paddock chose.
func (Adapter) Launch(s agents.Session) []string { return append(common(), "--session-id", s.ResumeID) }

// Resume continues the session's own conversation by its id.
func (Adapter) Resume(s agents.Session) []string { return append(common(), "-r", s.ResumeID) }

// Env keeps Qwen Code quiet about running with every permission (paddock's sandbox is the
// sandbox) and off the network beyond the model.
func (Adapter) Env(s agents.Session) []string {
	return []string{"QWEN_CODE_SUPPRESS_YOLO_WARNING=1"}
}

// Ask continues the conversation non-interactively and prints JSON.
func (Adapter) Ask(s agents.Session, prompt string) []string {
	return append(common(), "-r", s.ResumeID, "--output-format", "json", prompt)
}

// Answer reads the final result of Qwen Code's JSON output (a list of events whose last
// is {"type": "result", "result": TEXT}).
func (Adapter) Answer(output []byte) (string, string, error) {
	var events []struct {
		Type   string `json:"type"`
		Result string `json:"result"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(output), &events); err == nil {
		for i := len(events) - 1; i >= 0; i-- {
			if events[i].Type == "result" && events[i].Result != "" {
				return events[i].Result, "", nil
			}
		}
	}
	return "", "", errors.New("qwen printed no result: " + strings.TrimSpace(string(output[max(0, len(output)-400):])))
}

// Transcript is the chat named after the session's id, in the project's directory.
func (Adapter) Transcript(s agents.Session) string {
	return inside.Home + "/.qwen/projects/" + strings.ReplaceAll(s.Dir, "/", "-") + "/chats/" + s.ResumeID + ".jsonl"
}

// Parse implements agents.Adapter.
func (Adapter) Parse() func([]byte) ([]transcript.Entry, error) {
	return func(b []byte) ([]transcript.Entry, error) { return transcript.ParseQwen(bytes.NewReader(b)) }
}

// ChoosesID implements agents.Adapter: Qwen Code takes --session-id.
func (Adapter) ChoosesID() bool { return true }

// Fork implements agents.Adapter: Qwen Code has no fork of a conversation.
func (Adapter) Fork(agents.Session, string) []string { return nil }
