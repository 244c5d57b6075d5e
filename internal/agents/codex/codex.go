// Package codex adapts the Codex CLI (npm @openai/codex).
package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Adapter{}) }

// Adapter is the Codex CLI. Codex ignores OPENAI_BASE_URL, so its provider is declared in
// $CODEX_HOME/config.toml, pointing at the credential proxy; its own sandbox is bypassed
// (paddock's is the sandbox).
type Adapter struct{}

var _ agents.Adapter = Adapter{}

// Model is the model Codex asks for. Codex offers to move it to a newer model in a
// screen before its prompt; the config marks that offer as seen (notice.model_migrations).
const (
	Model         = "gpt-5.5"
	upgradeTarget = "gpt-6-sol"
)

// Name implements agents.Adapter.
func (Adapter) Name() string { return "codex" }

// Binary implements agents.Adapter.
func (Adapter) Binary() string { return "codex" }

// Install implements agents.Adapter.
func (Adapter) Install() string { return "npm install -g @openai/codex" }

// Reports implements agents.Adapter.
func (Adapter) Reports() agents.Reports { return agents.Reports{Idle: true} }

// StatusSource implements agents.Adapter.
func (Adapter) StatusSource() string {
	return "Codex's notify program at the end of each turn reports idle; working is assumed from the moment a prompt is sent"
}

// Files declare the provider, trust /workspace, skip the first-run screens, install the
// notify program and add paddock's context as global instructions.
func (Adapter) Files(s agents.Session) []agents.File {
	config := `model = "` + Model + `"
model_provider = "paddock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
notify = ["` + inside.GuestBinary + `", "agent", "notify", "--status", "idle", "--conversation-file", "` + rolloutGlob("{id}") + `"]

[model_providers.paddock]
name = "paddock"
base_url = "` + s.CredsBase + `/openai/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"

[projects."` + s.Dir + `"]
trust_level = "trusted"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false

[notice]
hide_full_access_warning = true
hide_world_writable_warning = true
hide_rate_limit_model_nudge = true
model_migrations = { "` + Model + `" = "` + upgradeTarget + `" }

[tui]
screen_reader_detection_done = true
`
	return []agents.File{
		{Path: inside.Home + "/.codex/config.toml", Content: []byte(config), Mode: 0o600},
		{Path: inside.Home + "/.codex/AGENTS.md", Content: []byte(agents.SystemPrompt + "\n"), Mode: 0o644},
	}
}

// Launch implements agents.Adapter.
func (Adapter) Launch(s agents.Session) []string {
	return []string{"codex", "--dangerously-bypass-approvals-and-sandbox", "--no-daemon"}
}

// Resume continues the session's own conversation, by the thread id Codex's notify
// program reported at the end of its first turn (`--last` would take the newest of the
// whole sandbox, another session's when two run). Before a first turn there is nothing
// to resume: a new conversation starts.
func (a Adapter) Resume(s agents.Session) []string {
	if s.ResumeID == "" {
		return a.Launch(s)
	}
	return []string{"codex", "resume", s.ResumeID, "--dangerously-bypass-approvals-and-sandbox", "--no-daemon"}
}

// Env implements agents.Adapter.
func (Adapter) Env(s agents.Session) []string { return []string{"CODEX_HOME=/home/agent/.codex"} }

// Ask returns nil: `codex exec resume` refuses a conversation the interactive session
// holds ("already has an active writer"), so paddock types the message into the session
// and reads the answer from the transcript instead.
func (Adapter) Ask(s agents.Session, prompt string) []string { return nil }

// Answer is never called (Ask is nil); it reads `codex exec --json` output, should Ask
// come back.
func (Adapter) Answer(output []byte) (string, string, error) {
	var answer, thread string
	sc := bufio.NewScanner(bytes.NewReader(output))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
			Item     struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.ThreadID != "" {
			thread = ev.ThreadID
		}
		if ev.Item.Type == "agent_message" && ev.Item.Text != "" {
			answer = ev.Item.Text
		}
	}
	if answer == "" {
		return "", thread, errors.New("codex printed no answer: " + strings.TrimSpace(string(output[max(0, len(output)-400):])))
	}
	return answer, thread, nil
}

// Transcript: Codex keeps rollouts by date under $CODEX_HOME/sessions, named after their
// thread id; before the first turn reports the id there is none of this session's.
func (Adapter) Transcript(s agents.Session) string {
	if s.ResumeID == "" {
		return ""
	}
	return rolloutGlob(s.ResumeID)
}

// rolloutGlob matches the rollout of one conversation: Codex names it after the thread.
func rolloutGlob(id string) string {
	return inside.Home + "/.codex/sessions/*/*/*/rollout-*-" + id + ".jsonl"
}

// Parse implements agents.Adapter.
func (Adapter) Parse() func([]byte) ([]transcript.Entry, error) {
	return func(b []byte) ([]transcript.Entry, error) { return transcript.ParseCodex(bytes.NewReader(b)) }
}

// ChoosesID implements agents.Adapter.
func (Adapter) ChoosesID() bool { return false }

// Fork implements agents.Adapter: Codex cannot continue a copy of a conversation.
func (Adapter) Fork(agents.Session, string) []string { return nil }
