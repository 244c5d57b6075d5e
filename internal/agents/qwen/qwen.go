// Package qwen describes Qwen Code (npm @qwen-code/qwen-code), pointed at an
// OpenAI-compatible endpoint: the credential proxy's OpenAI route, spoken to with the
// Responses API.
package qwen

import (
	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Agent) }

// Model is the model Qwen Code asks the OpenAI-compatible endpoint for.
const Model = "gpt-5.5"

// Agent is Qwen Code: paddock chooses its session id.
var Agent = &agents.Agent{
	Name:      "qwen",
	Binary:    "qwen",
	Package:   "@qwen-code/qwen-code@0.24.4",
	NeedsNode: true,
	Install:   "npm install -g @qwen-code/qwen-code",
	Tested:    "yes, the same checks against a scripted OpenAI Responses server (an OpenAI-compatible endpoint)",
	Hosts:     []string{"api.openai.com"},

	Command:   []string{"qwen", "--auth-type", "openai-responses", "-m", Model, "--approval-mode", "yolo"},
	New:       []string{"--session-id", "{id}"},
	Resume:    []string{"-r", "{id}"},
	ChoosesID: true,
	// Quiet about running with every permission: paddock's sandbox is the sandbox.
	Env:    []string{"QWEN_CODE_SUPPRESS_YOLO_WARNING=1"},
	Files:  files,
	Memory: inside.Home + "/.qwen/QWEN.md",

	// The chat named after the session's id, in the project's directory.
	State:      []string{"{home}/.qwen/projects"},
	Transcript: "{home}/.qwen/projects/{dir-}/chats/{id}.jsonl",
	Parse:      transcript.ParseQwen,
	Status: agents.Status{Ready: true, Idle: true,
		Source: "its hooks: SessionStart, UserPromptSubmit, Stop, PostToolUse, Notification (permission and idle prompts)"},
}

// files select the OpenAI Responses auth and the model, and install the hooks that
// report status.
func files(agents.Session) []agents.File {
	// Qwen's timeouts are in seconds. Its Notification hook fires for more than waiting
	// (auth_success at start, idle_prompt after every turn): the matchers tell them apart.
	hook := func(status, matcher string) map[string]any { return agents.Hook(status, matcher, 10) }
	return []agents.File{{Path: inside.Home + "/.qwen/settings.json", Mode: 0o600, Merge: map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "openai-responses"}},
		"model":    map[string]any{"name": Model},
		"hooks": map[string]any{
			"SessionStart":       []any{hook("idle", "")},
			"UserPromptSubmit":   []any{hook("working", "")},
			"PostToolUse":        []any{hook("working", "")},
			"PostToolUseFailure": []any{hook("working", "")},
			"Stop":               []any{hook("idle", "")},
			"StopFailure":        []any{hook("idle", "")},
			"Notification":       []any{hook("waiting", "^permission_prompt$"), hook("idle", "^idle_prompt$")},
		},
	}}}
}
