// Package opencode describes OpenCode (npm opencode-ai).
package opencode

import (
	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
)

func init() { agents.Register(Agent) }

// Agent is OpenCode.
var Agent = &agents.Agent{
	Name:    "opencode",
	Binary:  "opencode",
	Install: "npm install -g opencode-ai",
	Tested:  "no: only its argv is checked",
	Hosts:   []string{"api.anthropic.com", "api.openai.com", "openrouter.ai"},

	Command: []string{"opencode"},
	New:     []string{},
	Resume:  []string{"--continue"},
	Ask:     []string{"run", "--continue", "{prompt}"},
	Answer:  agents.PrintedAnswer,
	Memory:  inside.Home + "/.config/opencode/AGENTS.md",
	Status:  agents.Status{Source: "the process: running until it exits (no hook)"},
}
