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
	// No update, no telemetry, and no fetch of Anthropic's plugin marketplace at start
	// (from downloads.claude.ai, a denial on every new sandbox otherwise).
	Env:    []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1"},
	Files:  files,
	Memory: inside.Home + "/.claude/CLAUDE.md",

	// The working directory with every "/" made "-", then the session id.
	State:      []string{"{home}/.claude/projects"},
	Transcript: "{home}/.claude/projects/{dir-}/{id}.jsonl",
	Parse:      transcript.ParseClaude,
	Status:     agents.Status{Ready: true, Idle: true, Source: "its hooks: SessionStart, UserPromptSubmit, Notification (a permission, question or plan waiting for an answer), Stop, StopFailure"},
}

// NeedsAnswer matches the kinds of Claude Code's Notification hook (its
// notification_type) that wait for the user's answer: a permission, which is also how
// a question (AskUserQuestion) and a plan to approve (ExitPlanMode) ask, and an MCP
// server's request. Claude Code takes a matcher of names and "|" as a list of exact names.
const NeedsAnswer = "permission_prompt|worker_permission_prompt|elicitation_dialog|elicitation_url_dialog|agent_needs_input"

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
				// Only a notification that something waits for the user's answer
				// (a permission, a question, a plan to approve, an MCP server's
				// request) makes waiting; "Claude is waiting for your input" a minute
				// after a finished turn (idle_prompt) leaves the status as it is.
				"Notification": []any{agents.Hook("waiting", NeedsAnswer, 0)},
				"Stop":         hook("idle"),
				// A turn that fails (an API error Claude Code gave up on) runs
				// StopFailure, not Stop: the agent is back at its prompt.
				"StopFailure": hook("idle"),
			},
		}},
	}
}
