// Package gemini describes the Gemini CLI (npm @google/gemini-cli).
package gemini

import (
	"encoding/json"
	"errors"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Agent) }

// Model is passed with -m, which also skips the CLI's routing call to a small model.
const Model = "gemini-2.5-pro"

// Agent is the Gemini CLI, with API-key auth against the credential proxy's Gemini route.
var Agent = &agents.Agent{
	Name:      "gemini",
	Binary:    "gemini",
	Package:   "@google/gemini-cli@0.61.0",
	NeedsNode: true,
	Install:   "npm install -g @google/gemini-cli",
	Tested:    "yes, the same checks against a scripted Gemini API server",
	Hosts:     []string{"generativelanguage.googleapis.com", "oauth2.googleapis.com"},

	Command: []string{"gemini", "-m", Model, "-y"},
	New:     []string{},
	Resume:  []string{"-r", "latest"},
	Ask:     []string{"-r", "latest", "-o", "json", "-p", "{prompt}"},
	Answer:  answer,
	Files:   files,
	Memory:  inside.Home + "/.gemini/GEMINI.md",

	Transcript: "{home}/.gemini/tmp/*/chats/session-*.jsonl",
	Parse:      transcript.ParseGemini,
	Status:     agents.Status{Source: "the process: running until it exits (no hook)"},
}

// files select API-key auth and trust the working directory.
func files(s agents.Session) []agents.File {
	return []agents.File{
		{Path: inside.Home + "/.gemini/settings.json", Mode: 0o600, Merge: map[string]any{
			"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		}},
		{Path: inside.Home + "/.gemini/trustedFolders.json", Mode: 0o600, Merge: map[string]any{s.Dir: "TRUST_FOLDER"}},
	}
}

// answer reads the JSON output's response.
func answer(output []byte) (string, string, error) {
	var out struct {
		Response string `json:"response"`
	}
	if err := json.Unmarshal(output, &out); err != nil || out.Response == "" {
		return "", "", errors.New("gemini printed no response: " + agents.Tail(output))
	}
	return out.Response, "", nil
}
