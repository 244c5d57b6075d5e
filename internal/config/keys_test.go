package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFindKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"none", "default_backend = \"bwrap\"\n", nil},
		{"a provider's key", "[providers.anthropic]\nkey = \"whatever-it-is\"\n", []string{"providers.anthropic.key"}},
		{"key_command and key_env are no keys", "[providers.anthropic]\nkey_command = \"pass show anthropic\"\nkey_env = \"MY_KEY\"\n", nil},
		{"an empty key", "[providers.openai]\nkey = \"\"\n", nil},
		{"a key in an MCP server's environment", "[mcp.x]\ntransport = \"stdio\"\ncommand = \"x\"\nenv = { ANTHROPIC_API_KEY = \"abc\" }\n", []string{"mcp.x.env.ANTHROPIC_API_KEY"}},
		{"a reference is no key", "[mcp.x]\ntransport = \"http\"\nurl = \"https://x\"\nheaders = { Authorization = \"Bearer ${TOKEN}\", X-Api-Key = \"${K}\" }\n", nil},
		{"a header with a key", "[mcp.x]\ntransport = \"http\"\nurl = \"https://x\"\nheaders = { Authorization = \"Bearer abc\" }\n", []string{"mcp.x.headers.Authorization"}},
		{"a key's shape under any name", "[mcp.x]\ntransport = \"stdio\"\ncommand = \"x\"\nargs = [\"--with\", \"sk-ant-api03-AAAAAAAAAAAAAAAA\"]\n", []string{"mcp.x.args[1]"}},
		{"an OpenAI key's shape", "[backends.bwrap]\nnote = \"sk-proj-0123456789abcdefghij\"\n", []string{"backends.bwrap.note"}},
		{"not TOML", "[providers.anthropic\nkey = \"sk-ant-api03-AAAAAAAAAAAAAAAA\"\n", []string{"line 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := findKeys([]byte(tc.content)); !slices.Equal(got, tc.want) {
				t.Errorf("findKeys = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	if err := os.MkdirAll(filepath.Join(etc, "paddock"), 0o755); err != nil {
		t.Fatal(err)
	}
	withKey := "[providers.anthropic]\nkey = \"sk-ant-api03-AAAAAAAAAAAAAAAA\"\n"
	for _, tc := range []struct {
		name, path, content string
		mode                os.FileMode
		want                string // a part of the problem, "" for no warning
		fix                 string
	}{
		{"private", filepath.Join(dir, "a.toml"), withKey, 0o600, "", ""},
		{"world-readable", filepath.Join(dir, "b.toml"), withKey, 0o644, "readable by users other than its owner (mode 0644)", "chmod 600 "},
		{"group-readable", filepath.Join(dir, "c.toml"), withKey, 0o640, "readable by users other than its owner (mode 0640)", "chmod 600 "},
		{"readable but keyless", filepath.Join(dir, "d.toml"), "[providers.anthropic]\nkey_command = \"pass show a\"\n", 0o644, "", ""},
		{"under etc, private", filepath.Join(etc, "paddock", "config.toml"), withKey, 0o600, "lies under " + etc, "environment file"},
		{"missing", filepath.Join(dir, "absent.toml"), "", 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mode != 0 {
				if err := os.WriteFile(tc.path, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(tc.path, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			w, err := checkKeys(tc.path, etc)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if w != nil {
					t.Errorf("warning %+v, want none", w)
				}
				return
			}
			if w == nil || !strings.Contains(w.Problem, tc.want) || !strings.Contains(w.Fix, tc.fix) || !strings.Contains(w.Fix, "ANTHROPIC_API_KEY") ||
				!slices.Equal(w.Keys, []string{"providers.anthropic.key"}) {
				t.Errorf("warning %+v, want one saying %q with a fix saying %q and ANTHROPIC_API_KEY", w, tc.want, tc.fix)
			}
		})
	}
}
