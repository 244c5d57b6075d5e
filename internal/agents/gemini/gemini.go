// Package gemini describes the Gemini CLI (npm @google/gemini-cli).
package gemini

import (
	"time"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Agent) }

// Model is passed with -m, which also skips the CLI's routing call to a small model.
const Model = "gemini-2.5-pro"

// Agent is the Gemini CLI, with API-key auth against the credential proxy's Gemini route.
// paddock chooses its session id (--session-id), so each session resumes its own
// conversation (-r ID), two in one sandbox too.
var Agent = &agents.Agent{
	Name:      "gemini",
	Binary:    "gemini",
	Package:   "@google/gemini-cli@0.61.0",
	NeedsNode: true,
	Install:   "npm install -g @google/gemini-cli",
	Tested:    "yes, the same checks against a scripted Gemini API server, and two sessions in one sandbox each resuming its own conversation",
	Hosts:     []string{"generativelanguage.googleapis.com", "oauth2.googleapis.com"},
	Provider:  "gemini",

	Command:   []string{"gemini", "-m", Model, "-y"},
	New:       []string{"--session-id", "{id}"},
	Resume:    []string{"-r", "{id}"},
	ChoosesID: true,
	// Just resumed, it was seen dropping an Enter pressed 100 ms (and 250 ms) after a
	// paste showed, and submitting nothing.
	EnterAfter: 500 * time.Millisecond,
	Files:      files,
	Memory:     inside.Home + "/.gemini/GEMINI.md",

	// Chats are named after the minute they began and the id's first 8 characters.
	State:      []string{"{home}/.gemini/tmp"},
	Transcript: "{home}/.gemini/tmp/*/chats/session-*-{id8}.jsonl",
	Parse:      transcript.ParseGemini,
	Status: agents.Status{Ready: true, Idle: true,
		Source: "its hooks: SessionStart, BeforeAgent, AfterAgent, AfterTool, Notification"},
}

// files select API-key auth, trust the working directory (Gemini runs no hook in an
// untrusted folder) and install the hooks that report status.
func files(s agents.Session) []agents.File {
	// Gemini's timeouts are in milliseconds (and do not bound a hook: notify is quick).
	hook := func(status string) []any {
		h := agents.Hook(status, "", 10000)
		h["hooks"].([]any)[0].(map[string]any)["name"] = "paddock-" + status
		return []any{h}
	}
	return []agents.File{
		{Path: inside.Home + "/.gemini/settings.json", Mode: 0o600, Merge: map[string]any{
			"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
			"hooks": map[string]any{
				"SessionStart": hook("idle"),
				"BeforeAgent":  hook("working"),
				"AfterTool":    hook("working"),
				"AfterAgent":   hook("idle"),
				"Notification": hook("waiting"),
			},
			// No "Executing hooks" line on the screen for each report.
			"hooksConfig": map[string]any{"notifications": false},
			// A Gemini that starts cleans up the project's chats it finds no messages in,
			// which deleted the chat of another session just started in the same sandbox.
			// Nor does it look for a newer version (on npm's registry) or install one:
			// the sandbox's image pins it.
			"general": map[string]any{"sessionRetention": map[string]any{"enabled": false},
				"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		}},
		{Path: inside.Home + "/.gemini/trustedFolders.json", Mode: 0o600, Merge: map[string]any{s.Dir: "TRUST_FOLDER"}},
	}
}
