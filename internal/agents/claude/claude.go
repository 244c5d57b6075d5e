// Package claude adapts Claude Code (npm @anthropic-ai/claude-code).
package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Adapter{}) }

// Adapter is Claude Code.
type Adapter struct{}

var _ agents.Adapter = Adapter{}

// Name implements agents.Adapter.
func (Adapter) Name() string { return "claude" }

// Binary implements agents.Adapter.
func (Adapter) Binary() string { return "claude" }

// Install implements agents.Adapter.
func (Adapter) Install() string { return "npm install -g @anthropic-ai/claude-code" }

// Reports implements agents.Adapter.
func (Adapter) Reports() agents.Reports { return agents.Reports{Ready: true, Idle: true} }

// StatusSource implements agents.Adapter.
func (Adapter) StatusSource() string { return "hooks" }

// Files skip every dialog Claude Code shows before its prompt in a fresh home: onboarding,
// "use this API key?", folder trust and the bypass-permissions warning; and install the
// hooks that report status.
func (Adapter) Files(s agents.Session) []agents.File {
	approved := s.Token
	if len(approved) > 20 {
		approved = approved[len(approved)-20:]
	}
	hook := func(status string) []any {
		return []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": agents.NotifyCommand(status)}}}}
	}
	return []agents.File{
		{Path: inside.Home + "/.claude.json", Mode: 0o600, Merge: map[string]any{
			"hasCompletedOnboarding":        true,
			"bypassPermissionsModeAccepted": true,
			"customApiKeyResponses":         map[string]any{"approved": []any{approved}, "rejected": []any{}},
			"projects": map[string]any{s.Dir: map[string]any{
				"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true,
			}},
		}},
		{Path: inside.Home + "/.claude/settings.json", Mode: 0o600, Merge: map[string]any{
			"skipDangerousModePermissionPrompt": true,
			"hooks": map[string]any{
				"SessionStart":     hook("idle"),
				"UserPromptSubmit": hook("working"),
				"Notification":     hook("waiting"),
				"Stop":             hook("idle"),
			},
		}},
	}
}

func common() []string {
	return []string{"claude", "--dangerously-skip-permissions", "--append-system-prompt", agents.SystemPrompt}
}

// Launch starts a conversation with the id paddock chose, so it can be resumed.
func (Adapter) Launch(s agents.Session) []string {
	return append(common(), "--session-id", s.ResumeID)
}

// Fork continues a copy of conversation from under the id s.ResumeID (--fork-session):
// the original goes on unchanged.
func (Adapter) Fork(s agents.Session, from string) []string {
	return append(common(), "--resume", from, "--fork-session", "--session-id", s.ResumeID)
}

// Resume continues the conversation.
func (Adapter) Resume(s agents.Session) []string {
	return append(common(), "--resume", s.ResumeID)
}

// Env implements agents.Adapter.
func (Adapter) Env(s agents.Session) []string {
	return []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
}

// Ask resumes the conversation in print mode (or starts it, when it has no transcript yet).
func (Adapter) Ask(s agents.Session, prompt string) []string {
	id := []string{"--resume", s.ResumeID}
	if s.Fresh {
		id = []string{"--session-id", s.ResumeID}
	}
	return append(append(common(), "-p", prompt, "--output-format", "stream-json", "--verbose"), id...)
}

// Answer reads the stream-json output: the final "result" line holds the answer.
func (Adapter) Answer(output []byte) (string, string, error) {
	sc := bufio.NewScanner(bytes.NewReader(output))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Type      string `json:"type"`
			Subtype   string `json:"subtype"`
			Result    string `json:"result"`
			IsError   bool   `json:"is_error"`
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Type != "result" {
			continue
		}
		if line.IsError {
			return "", line.SessionID, fmt.Errorf("claude: %s: %s", line.Subtype, line.Result)
		}
		return line.Result, line.SessionID, nil
	}
	return "", "", errors.New("claude printed no result: " + strings.TrimSpace(tail(output)))
}

// Transcript is where Claude Code keeps the conversation: the working directory with
// every "/" made "-", then the session id.
func (Adapter) Transcript(s agents.Session) string {
	return inside.Home + "/.claude/projects/" + strings.ReplaceAll(s.Dir, "/", "-") + "/" + s.ResumeID + ".jsonl"
}

func tail(b []byte) string {
	if len(b) > 400 {
		b = b[len(b)-400:]
	}
	return string(b)
}

// Parse implements agents.Adapter.
func (Adapter) Parse() func([]byte) ([]transcript.Entry, error) {
	return func(b []byte) ([]transcript.Entry, error) { return transcript.ParseClaude(bytes.NewReader(b)) }
}

// ChoosesID implements agents.Adapter.
func (Adapter) ChoosesID() bool { return true }
