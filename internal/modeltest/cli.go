package modeltest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/paddockhq/paddock/internal/agents/codex/codexconf"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestKey is the API key the CLI helpers hand the agents.
const TestKey = "test-key"

// codexKeyEnv is the variable Codex reads its key from (config env_key).
const codexKeyEnv = "MODELTEST_API_KEY"

// RequireCLI returns the path of the agent CLI name, skipping the test when it is not
// installed (failing it under testenv.Strict: make setup installs every CLI the tests
// drive), and holds one of the machine's agent-cli slots (testenv.Slot) until tb ends.
func RequireCLI(tb testing.TB, name string) string {
	tb.Helper()
	p := testenv.Program(tb, name, "make setup installs the agent CLIs from npm")
	// An agent CLI keeps a processor busy for seconds at a time: at most three run at
	// once across make test's processes, so that none waits out its limits starved.
	testenv.Slot(tb, "agent-cli", 3)
	return p
}

// baseEnv is the environment every agent starts from: PATH and HOME only,
// so that nothing of the caller's (keys, proxies) leaks into the agent.
func baseEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}
}

// ClaudeCmd returns a command running the real claude CLI with args in dir,
// HOME set to home, every model call sent to s with TestKey, and all
// nonessential traffic (telemetry, updates) off so that it sends nothing but
// model calls. IS_SANDBOX=1 lets --dangerously-skip-permissions run as
// root. Transcripts land in home/.claude/projects.
func (s *Anthropic) ClaudeCmd(ctx context.Context, home, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "claude", args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(home),
		"ANTHROPIC_BASE_URL="+s.URL(),
		"ANTHROPIC_API_KEY="+TestKey,
		"IS_SANDBOX=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	)
	return cmd
}

// CodexConfig is the $CODEX_HOME/config.toml paddock writes for Codex (codexconf.Config),
// sending its model calls to s with the key from codexKeyEnv, trusting dir.
func (s *OpenAIResponses) CodexConfig(dir string) string {
	return codexconf.Config("gpt-5.5", "gpt-6-sol", s.URL()+"/v1", codexKeyEnv, dir, nil)
}

// CodexCmd writes CodexConfig(dir) to codexHome/config.toml and returns a
// command running the real codex CLI with args in dir, with CODEX_HOME and
// HOME set to codexHome and TestKey as the provider's key. Its standard
// input is empty, as `codex exec` otherwise waits to read more prompt.
// Transcripts land in codexHome/sessions.
func (s *OpenAIResponses) CodexCmd(ctx context.Context, codexHome, dir string, args ...string) (*exec.Cmd, error) {
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(s.CodexConfig(dir)), 0o600); err != nil {
		return nil, fmt.Errorf("write codex config: %w", err)
	}
	cmd := exec.CommandContext(ctx, "codex", args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(codexHome), "CODEX_HOME="+codexHome, codexKeyEnv+"="+TestKey)
	return cmd, nil
}
