package egress

import (
	"slices"
	"strings"
)

// agentHosts are the hosts each agent needs to talk to its model provider, and nothing else (no
// telemetry, no error reporting).
var agentHosts = map[string][]string{
	"claude":   {"api.anthropic.com"},
	"codex":    {"api.openai.com", "chatgpt.com"},
	"gemini":   {"generativelanguage.googleapis.com", "oauth2.googleapis.com"},
	"goose":    {"api.anthropic.com", "api.openai.com", "openrouter.ai"},
	"aider":    {"api.anthropic.com", "api.openai.com", "openrouter.ai"},
	"opencode": {"api.anthropic.com", "api.openai.com", "openrouter.ai"},
}

// commonHosts are the package registries and the GitHub hosts that coding work needs. Shared
// buckets such as storage.googleapis.com are left out on purpose: they serve anyone's data.
var commonHosts = []string{
	// npm and yarn
	"registry.npmjs.org", "registry.yarnpkg.com",
	// Python
	"pypi.org", "files.pythonhosted.org",
	// Go
	"proxy.golang.org", "sum.golang.org",
	// Rust
	"crates.io", "index.crates.io", "static.crates.io",
	// Debian
	"deb.debian.org", "security.debian.org",
	// GitHub
	"github.com", "api.github.com", "codeload.github.com", "objects.githubusercontent.com", "raw.githubusercontent.com",
}

// DefaultAllowlist returns the built-in allow patterns for a sandbox running the given agents: each
// agent's provider hosts plus package registries and GitHub, so a fresh sandbox can work without the
// user writing rules. Agent names are case-insensitive; unknown ones add nothing. The result is sorted
// and has no duplicates.
func DefaultAllowlist(agents []string) []string {
	hosts := slices.Clone(commonHosts)
	for _, a := range agents {
		hosts = append(hosts, agentHosts[strings.ToLower(strings.TrimSpace(a))]...)
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}
