// Package claude describes Claude Code (npm @anthropic-ai/claude-code).
package claude

import (
	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/transcript"
)

func init() { agents.Register(Agent) }

// Agent is Claude Code: paddock chooses its session id, its hooks report every status.
var Agent = &agents.Agent{
	Name:     "claude",
	Binary:   "claude",
	Package:  "@anthropic-ai/claude-code@2.1.330",
	Install:  "npm install -g @anthropic-ai/claude-code",
	Tested:   "yes, end to end against a scripted Anthropic server: the prompt first, a tool call as agent in /workspace, the transcript, --non-interactive, restart resuming, fork, the TUI; on bwrap, docker and gVisor",
	Hosts:    []string{"api.anthropic.com"},
	Provider: "anthropic",
	Login:    "claude",

	Command:   []string{"claude", "--dangerously-skip-permissions", "--append-system-prompt", "{system}"},
	New:       []string{"--session-id", "{id}"},
	Resume:    []string{"--resume", "{id}"},
	Fork:      []string{"--resume", "{from}", "--fork-session", "--session-id", "{id}"},
	ChoosesID: true,
	Env:       []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"},
	Files:     files,
	Memory:    inside.Home + "/.claude/CLAUDE.md",

	// The working directory with every "/" made "-", then the session id.
	State:      []string{"{home}/.claude/projects"},
	Transcript: "{home}/.claude/projects/{dir-}/{id}.jsonl",
	Parse:      transcript.ParseClaude,
	Status:     agents.Status{Ready: true, Idle: true, Source: "its hooks: SessionStart, UserPromptSubmit, Notification, Stop, StopFailure"},
}

// files skip every dialog Claude Code shows before its prompt in a fresh home: onboarding,
// "use this API key?", folder trust and the bypass-permissions warning; and install the
// hooks that report status.
func files(s agents.Session) []agents.File {
	approved := s.Token
	if len(approved) > 20 {
		approved = approved[len(approved)-20:]
	}
	hook := func(status string) []any { return []any{agents.Hook(status, "", 0)} }
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
				// A turn that fails (an API error Claude Code gave up on) runs
				// StopFailure, not Stop: the agent is back at its prompt.
				"StopFailure": hook("idle"),
			},
		}},
	}
}
