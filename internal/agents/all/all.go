// Package all registers every agent adapter.
package all

import (
	_ "github.com/paddockhq/paddock/internal/agents/aider"    // registers aider
	_ "github.com/paddockhq/paddock/internal/agents/claude"   // registers claude
	_ "github.com/paddockhq/paddock/internal/agents/codex"    // registers codex
	_ "github.com/paddockhq/paddock/internal/agents/gemini"   // registers gemini
	_ "github.com/paddockhq/paddock/internal/agents/goose"    // registers goose
	_ "github.com/paddockhq/paddock/internal/agents/opencode" // registers opencode
	_ "github.com/paddockhq/paddock/internal/agents/qwen"     // registers qwen
	_ "github.com/paddockhq/paddock/internal/agents/shell"    // registers shell
)
