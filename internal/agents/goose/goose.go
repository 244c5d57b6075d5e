// Package goose describes goose (a release binary, not on npm), which must be installed
// in the image or on the host (bwrap).
package goose

import (
	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
)

func init() { agents.Register(Agent) }

// Agent is goose: its sessions are named after paddock's, from which it resumes.
var Agent = &agents.Agent{
	Name:    "goose",
	Binary:  "goose",
	Install: "install the goose binary from its release page into the image or the host's /usr/local/bin",
	Tested:  "no: it ships as a release binary, which cannot be downloaded here; only its argv is checked",
	Hosts:   []string{"api.anthropic.com", "api.openai.com", "openrouter.ai"},

	Command: []string{"goose"},
	New:     []string{"session", "-n", "{name}"},
	Resume:  []string{"session", "-r", "-n", "{name}"},
	Ask:     []string{"run", "-r", "-n", "{name}", "-t", "{prompt}"},
	Answer:  agents.PrintedAnswer,
	Env:     []string{"GOOSE_PROVIDER=anthropic", "GOOSE_MODE=auto", "GOOSE_DISABLE_KEYRING=1"},
	Memory:  inside.Home + "/.config/goose/.goosehints",
	Status:  agents.Status{Source: "the process: running until it exits (no hook)"},
}
