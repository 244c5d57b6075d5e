package gitsync

import (
	"context"
	"encoding/json"
	"os/exec"
	"path"
	"reflect"
	"strconv"
	"strings"
)

// HostCode is a file the agent's work changes that runs code on the host once merged:
// nothing runs at sync (host git is hardened), but a merge, a checkout, `npm install`,
// `make` or opening the folder in an editor would run what the sandbox wrote.
type HostCode struct {
	Ref  string `json:"ref"`
	Path string `json:"path"`
	// Why says what runs it.
	Why string `json:"why"`
}

// runsOnHost says why a path runs code on the host, or "" when it does not. hooksPath is
// the host repository's core.hooksPath, relative to its top ("" when unset).
//
// It names what runs from a checkout without the user running the project: git hooks,
// what an editor, direnv or a dev container runs on opening or entering the folder, what an
// AI agent's CLI runs or trusts when started there (hooks, MCP servers, plugins, commands
// with shell), and what a package manager runs or loads on install. Left out, each for a
// reason: the project's own code and build scripts (setup.py, build.rs, go:generate) are
// code a review reads as code, though Makefiles stay named for the habit of running make
// on a checkout; CLAUDE.md, AGENTS.md and GEMINI.md are prompts, not programs; CI
// workflows run on CI, not here; .lfsconfig may name only git-lfs's URLs, never a program;
// JetBrains' .idea asks before it trusts a project.
func runsOnHost(p, hooksPath string) string {
	under := func(dir string) bool { return strings.HasPrefix(p, dir+"/") }
	base := path.Base(p)
	switch {
	case hooksPath != "" && under(strings.TrimSuffix(hooksPath, "/")):
		return "a git hook (core.hooksPath " + hooksPath + ")"
	case under(".husky"):
		return "a git hook (husky)"
	case under(".githooks"):
		return "a git hook, once core.hooksPath points at .githooks"
	case p == ".pre-commit-config.yaml":
		return "pre-commit's hooks"
	case base == ".envrc":
		return "direnv runs it on entering the directory"
	case p == ".vscode/tasks.json" || p == ".vscode/settings.json" || p == ".vscode/launch.json" || p == ".vscode/mcp.json":
		return "VS Code runs its tasks and settings"
	case under(".devcontainer") || p == ".devcontainer.json":
		return "a dev container's build and lifecycle commands"
	case base == "Makefile" || base == "makefile" || base == "GNUmakefile":
		return "make runs its recipes"
	case p == ".gitmodules":
		return "submodule URLs and commands, on git submodule update"
	case p == ".gitattributes":
		return "filter and diff drivers it names, once configured"
	}
	return agentOrPackageConfig(p, base)
}

// agentOrPackageConfig says why p, a file an AI agent's CLI or a package manager reads
// from a checkout, runs code on the host, or "" when it does not.
func agentOrPackageConfig(p, base string) string {
	under := func(dir string) bool { return strings.HasPrefix(p, dir+"/") }
	prompt := base == "CLAUDE.md" || base == "GEMINI.md" || base == "QWEN.md" || base == "AGENTS.md"
	switch {
	case under(".claude") && !prompt:
		return "Claude Code runs its hooks, commands and skills when started here"
	case p == ".mcp.json":
		return "Claude Code starts the MCP servers it names"
	case under(".gemini") && !prompt:
		return "Gemini CLI runs its hooks, MCP servers and commands when started here"
	case under(".qwen") && !prompt:
		return "Qwen Code runs its MCP servers and commands when started here"
	case under(".codex") && !prompt:
		return "Codex runs the MCP servers and notify command of its config"
	case p == "opencode.json" || p == "opencode.jsonc" || under(".opencode") && !prompt:
		return "OpenCode runs its plugins, MCP servers and commands when started here"
	case under(".cursor") && !under(".cursor/rules"):
		return "Cursor runs its hooks and MCP servers"
	case p == ".cargo/config.toml" || p == ".cargo/config":
		return "cargo runs the runners, wrappers and aliases it names"
	case base == ".npmrc":
		return "npm runs the script shell and node options it names"
	case base == ".yarnrc.yml" || base == ".yarnrc":
		return "yarn runs the yarnPath and plugins it names"
	case base == ".pnpmfile.cjs" || base == ".pnpmfile.mjs":
		return "pnpm runs it on install"
	case base == "bunfig.toml" || base == ".bunfig.toml":
		return "bun runs the preload scripts it names"
	case base == "mise.toml" || base == ".mise.toml" || under(".mise"):
		return "mise runs its hooks and env scripts on entering the directory, once trusted"
	}
	return ""
}

// RunsOnHost lists the files the fetched updates change that run code on the host after
// a merge: git hooks, .envrc, editor tasks, dev container files, Makefiles, AI agents'
// and package managers' configuration (runsOnHost), and package.json when its scripts
// changed (its other fields run nothing). base is the
// commit the sandbox started from, for refs that are new.
func (g *Git) RunsOnHost(ctx context.Context, res Result, base string) []HostCode {
	hooksPath := g.hooksPath(ctx)
	var out []HostCode
	seen := map[string]bool{} // a path is named once, at the first ref that changes it
	for _, u := range res.Updates {
		from := u.Old
		if from == "" {
			from = base
		}
		for _, f := range u.Files {
			fields := strings.Split(f, "\t")
			p := fields[len(fields)-1]
			if strings.HasPrefix(p, `"`) {
				// git quotes a name with a byte outside ASCII ("\303\274/.envrc"):
				// its base is what says whether it runs.
				if raw, err := strconv.Unquote(p); err == nil {
					p = raw
				}
			}
			if seen[p] {
				continue
			}
			why := runsOnHost(p, hooksPath)
			if why == "" && path.Base(p) == "package.json" && g.scriptsChanged(ctx, from, u.New, p) {
				why = "npm runs its scripts (they changed)"
			}
			if why != "" {
				seen[p] = true
				out = append(out, HostCode{Ref: u.Ref, Path: p, Why: why})
			}
		}
	}
	return out
}

// hooksPath is the host repository's core.hooksPath, relative to its top ("" when unset),
// read once.
func (g *Git) hooksPath(ctx context.Context) string {
	g.hooks.once.Do(func() {
		if g.hooksPathUnset() {
			return
		}
		p := strings.TrimPrefix(g.userConfig(ctx, "core.hooksPath"), "./")
		if path.IsAbs(p) {
			p = strings.TrimPrefix(p, strings.TrimSuffix(g.Repo, "/")+"/")
		}
		g.hooks.path = p
	})
	return g.hooks.path
}

// scriptsChanged says whether the "scripts" of a package.json differ between two commits
// (a file that does not parse counts as changed).
func (g *Git) scriptsChanged(ctx context.Context, from, to, p string) bool {
	scripts := func(rev string) (any, bool) {
		if rev == "" {
			return nil, true
		}
		text, err := g.Run(ctx, "cat-file", "blob", rev+":"+p)
		if err != nil {
			return nil, true // absent on that side
		}
		var v struct {
			Scripts any `json:"scripts"`
		}
		if json.Unmarshal([]byte(text), &v) != nil {
			return nil, false
		}
		return v.Scripts, true
	}
	a, okA := scripts(from)
	b, okB := scripts(to)
	return !okA || !okB || !reflect.DeepEqual(a, b)
}

// userConfig reads a value of the host repository's own config (and the user's), which
// Run's hardening overrides: reading config runs nothing.
func (g *Git) userConfig(ctx context.Context, key string) string {
	cmd := exec.CommandContext(ctx, "git", "-C", g.Repo, "config", "--get", key)
	cmd.Env = append(g.environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
