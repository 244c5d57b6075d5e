package alarm

import (
	"path"
	"strings"

	"github.com/paddockhq/paddock/internal/gitsync"
)

// Where a sandbox keeps the workspace and the agent's home (the guest's layout).
const (
	workspaceDir = "/workspace"
	worktreesDir = "/workspace/.worktrees"
)

// ControlFile says why a write to p, a path inside the sandbox (absolute, or relative to
// the workspace), goes for the agent's controls, or "" when it is ordinary work. p is
// the sandbox's text: it is only ever compared, never opened.
//
// In the agent's home: Claude Code's settings and hooks (paddock's own hooks that report
// the session's status live there), Codex's, Gemini CLI's and Qwen Code's configuration.
// In the workspace or a worktree: the same agents' configuration and MCP servers, git's
// hooks, config and attributes, and what the host runs once the work is merged there
// (gitsync's list), but for the project's Makefiles and package.json, which agents edit
// as ordinary work and a merge shows as code.
func ControlFile(p string) string {
	p = path.Clean(p)
	if rel, ok := inHome(p); ok {
		return homeControl(rel)
	}
	rel, ok := inWorkspace(p)
	if !ok {
		return ""
	}
	return workspaceControl(rel)
}

// inHome is p relative to a home directory (/home/USER or /root).
func inHome(p string) (string, bool) {
	if rest, ok := strings.CutPrefix(p, "/root/"); ok {
		return rest, true
	}
	rest, ok := strings.CutPrefix(p, "/home/")
	if !ok {
		return "", false
	}
	_, rel, ok := strings.Cut(rest, "/")
	return rel, ok
}

// inWorkspace is p relative to the top of the workspace or of its worktree; a relative p
// is taken as relative to the workspace.
func inWorkspace(p string) (string, bool) {
	if !path.IsAbs(p) {
		if p == "." || strings.HasPrefix(p, "../") || p == ".." {
			return "", false
		}
		return p, true
	}
	if rest, ok := strings.CutPrefix(p, worktreesDir+"/"); ok {
		_, rel, ok := strings.Cut(rest, "/")
		return rel, ok
	}
	rel, ok := strings.CutPrefix(p, workspaceDir+"/")
	return rel, ok
}

func homeControl(rel string) string {
	under := func(dir string) bool { return strings.HasPrefix(rel, dir+"/") }
	switch {
	case strings.HasPrefix(rel, ".claude/settings") && strings.HasSuffix(rel, ".json") && !strings.Contains(rel[len(".claude/"):], "/"):
		return "Claude Code's settings and hooks (paddock's status hooks among them)"
	case under(".claude/hooks"):
		return "Claude Code's hooks"
	case rel == ".codex/config.toml" || under(".codex/hooks"):
		return "Codex's configuration (its notify command, MCP servers)"
	case rel == ".gemini/settings.json":
		return "Gemini CLI's settings and hooks"
	case rel == ".qwen/settings.json":
		return "Qwen Code's settings"
	case rel == ".mcp.json":
		return "MCP servers an agent starts"
	}
	return ""
}

func workspaceControl(rel string) string {
	under := func(dir string) bool { return strings.HasPrefix(rel, dir+"/") }
	base := path.Base(rel)
	switch {
	case under(".git/hooks"):
		return "a git hook"
	case rel == ".git/config" || rel == ".git/info/attributes":
		return "git's configuration (filters, hooks path, fsmonitor)"
	case strings.HasPrefix(rel, ".claude/settings") && strings.HasSuffix(rel, ".json"):
		return "Claude Code's settings and hooks for this project"
	case rel == ".mcp.json" || rel == ".vscode/mcp.json":
		return "MCP servers an agent starts"
	case under(".codex"), under(".gemini"), under(".qwen"):
		return "an agent's configuration for this project"
	case base == "Makefile" || base == "makefile" || base == "GNUmakefile" || base == "package.json":
		return "" // ordinary work: the merge shows it as code
	}
	return gitsync.PathRunsOnHost(rel)
}
