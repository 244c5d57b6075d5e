package claude

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/agents"
)

// settings is ~/.claude/settings.json as paddock writes it, read back as Claude Code reads it.
func settings(t *testing.T) map[string]any {
	t.Helper()
	for _, f := range files(agents.Session{Dir: "/workspace", Token: "sk-ant-placeholder-0123456789abcdefghij"}) {
		if strings.HasSuffix(f.Path, "/.claude/settings.json") {
			raw, err := json.Marshal(f.Merge)
			if err != nil {
				t.Fatal(err)
			}
			var s map[string]any
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatal("no ~/.claude/settings.json")
	return nil
}

// matches applies a hook's matcher as Claude Code 2.1.330 does: empty or "*" matches
// everything, a matcher of names and "|" is a list of exact names, anything else is a
// regular expression.
func matches(matcher, value string) bool {
	switch {
	case matcher == "" || matcher == "*":
		return true
	case regexp.MustCompile(`^[a-zA-Z0-9_|]+$`).MatchString(matcher):
		return slices.Contains(strings.Split(matcher, "|"), value)
	default:
		return regexp.MustCompile(matcher).MatchString(value)
	}
}

// statusesFor are the statuses the Notification hooks report for a notification of
// this kind.
func statusesFor(t *testing.T, kind string) []string {
	var out []string
	hooks := settings(t)["hooks"].(map[string]any)
	for _, e := range hooks["Notification"].([]any) {
		entry := e.(map[string]any)
		m, _ := entry["matcher"].(string)
		if !matches(m, kind) {
			continue
		}
		for _, h := range entry["hooks"].([]any) {
			cmd := h.(map[string]any)["command"].(string)
			f := strings.Fields(cmd[strings.Index(cmd, "--status"):])
			out = append(out, f[1])
		}
	}
	return out
}

// TestNotificationKinds: only a notification that waits for the user's answer makes
// the session waiting; the reminder a minute after a finished turn ("Claude is waiting
// for your input", idle_prompt) and a login's success report nothing.
func TestNotificationKinds(t *testing.T) {
	for kind, want := range map[string][]string{
		"permission_prompt":  {"waiting"}, // a tool's permission; AskUserQuestion and ExitPlanMode ask so too
		"elicitation_dialog": {"waiting"}, // an MCP server asks the user
		"idle_prompt":        nil,
		"auth_success":       nil,
	} {
		if got := statusesFor(t, kind); !slices.Equal(got, want) {
			t.Errorf("a %s notification reports %q, want %q", kind, got, want)
		}
	}
}

// TestNoUpdatesOrMarketplace: Claude Code in a sandbox neither updates itself nor
// fetches Anthropic's plugin marketplace (downloads.claude.ai, which the egress proxy
// would refuse on every new sandbox).
func TestNoUpdatesOrMarketplace(t *testing.T) {
	for _, want := range []string{"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1"} {
		if !slices.Contains(Agent.Env, want) {
			t.Errorf("Claude Code's environment lacks %s: %q", want, Agent.Env)
		}
	}
}
