package egress

import "slices"

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

// DefaultAllowlist returns the built-in allow patterns for a sandbox: the hosts its agents need to
// talk to their model providers (and nothing else: no telemetry, no error reporting; each agent's
// description names them) plus package registries and GitHub, so a fresh sandbox can work without
// the user writing rules. The result is sorted and has no duplicates.
func DefaultAllowlist(providerHosts []string) []string {
	hosts := append(slices.Clone(commonHosts), providerHosts...)
	slices.Sort(hosts)
	return slices.Compact(hosts)
}
