package gitsync

import "testing"

// TestRunsOnHost names each file a merge brings in that runs code on the host, and none
// that does not.
func TestRunsOnHost(t *testing.T) {
	t.Parallel()
	runs := []string{
		".husky/pre-commit", ".githooks/pre-push", "hooks/post-merge", ".pre-commit-config.yaml",
		".envrc", "sub/.envrc", ".vscode/tasks.json", ".vscode/settings.json", ".vscode/mcp.json",
		".devcontainer/devcontainer.json", ".devcontainer.json", "Makefile", "sub/GNUmakefile",
		".gitmodules", ".gitattributes",
		// AI agents' CLIs: hooks and MCP servers run when the user starts one in the checkout.
		".claude/settings.json", ".claude/settings.local.json", ".claude/commands/deploy.md",
		".claude/skills/x/run.sh", ".mcp.json", ".gemini/settings.json", ".gemini/commands/x.toml",
		".qwen/settings.json", ".codex/config.toml", "opencode.json", ".opencode/plugin/x.js",
		".cursor/mcp.json", ".cursor/hooks.json",
		// Package managers: what install or a build loads from the checkout.
		".cargo/config.toml", ".cargo/config", ".npmrc", "web/.npmrc", ".yarnrc.yml", ".yarnrc",
		".pnpmfile.cjs", "bunfig.toml", "mise.toml", ".mise.toml",
	}
	for _, p := range runs {
		if runsOnHost(p, "hooks") == "" {
			t.Errorf("%s: not named as running code on the host", p)
		}
	}
	quiet := []string{
		"README.md", "CLAUDE.md", ".claude/CLAUDE.md", "AGENTS.md", "GEMINI.md", ".gemini/GEMINI.md",
		".cursor/rules/style.mdc", ".github/workflows/ci.yml", ".lfsconfig", "main.go", "package.json",
		"docs/claude/settings.json", "x.mcp.json", "notes/.claude", ".vscode/extensions.json",
	}
	for _, p := range quiet {
		if why := runsOnHost(p, ""); why != "" {
			t.Errorf("%s: named as running code on the host (%s)", p, why)
		}
	}
}
