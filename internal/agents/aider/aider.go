// Package aider describes Aider (PyPI aider-chat), which must be installed in the image
// or on the host (bwrap).
package aider

import (
	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
)

func init() { agents.Register(Agent) }

// conventions is the file Aider is told to read (--read): paddock's context goes there.
const conventions = inside.Home + "/.paddock/CONVENTIONS.md"

// Agent is Aider: it answers every question itself (--yes-always) and keeps its chat
// history in the workspace, from which it resumes.
var Agent = &agents.Agent{
	Name:    "aider",
	Binary:  "aider",
	Install: "pipx install aider-chat (or pip install aider-chat)",
	Tested:  "no: it comes from PyPI, which cannot be reached here; only its argv is checked",
	Hosts:   []string{"api.anthropic.com", "api.openai.com", "openrouter.ai"},

	Command: []string{"aider", "--yes-always", "--no-check-update", "--no-show-release-notes", "--read", conventions},
	New:     []string{},
	Resume:  []string{"--restore-chat-history"},
	Ask:     []string{"--restore-chat-history", "--message", "{prompt}"},
	Answer:  agents.PrintedAnswer,
	Memory:  conventions,
	Status:  agents.Status{Source: "the process: running until it exits (no hook)"},
}
