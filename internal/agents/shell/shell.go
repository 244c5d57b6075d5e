// Package shell describes any command: a session that runs a command line (or a login
// shell) in tmux, with no conversation to resume.
package shell

import "github.com/paddockhq/paddock/internal/agents"

func init() { agents.Register(Agent) }

// Agent runs the session's command line, or a login shell; a restart runs it again.
var Agent = &agents.Agent{
	Name:    "shell",
	Binary:  "sh",
	Tested:  "yes, in the CLI's scripts, which run their commands as shell sessions",
	Command: []string{"sh", "-c", "{command}"},
	Status:  agents.Status{Source: "the process: running until it exits"},
}
