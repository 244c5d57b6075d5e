package all_test

import (
	"os"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/paddockhq/paddock/internal/agents"
	_ "github.com/paddockhq/paddock/internal/agents/all"
	"github.com/paddockhq/paddock/internal/agents/codex"
	"github.com/paddockhq/paddock/internal/proxy/egress"
)

// The agent table of docs/sessions.md says, row by row, what each agent's description
// says: how to install it, what the tests run of it for real, and where its status comes
// from.
func TestDocsAgentTable(t *testing.T) {
	readme, err := os.ReadFile("../../../docs/sessions.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(readme), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) == 4 && strings.HasPrefix(cells[0], "| `") {
			rows[strings.Trim(cells[0], "| `")] = cells[1:]
		}
	}
	for _, name := range agents.Names() {
		a, _ := agents.Get(name)
		row, ok := rows[name]
		if !ok {
			t.Errorf("docs/sessions.md has no row for agent %s", name)
			continue
		}
		if a.Install != "" && !strings.Contains(row[0], a.Install) {
			t.Errorf("docs/sessions.md: %s installs with %q, its description with %q", name, row[0], a.Install)
		}
		if got := strings.TrimSpace(row[1]); got != a.Tested {
			t.Errorf("docs/sessions.md: %s is tested %q, its description says %q", name, got, a.Tested)
		}
		if got := strings.TrimSuffix(strings.TrimSpace(row[2]), " |"); got != a.Status.Source {
			t.Errorf("docs/sessions.md: %s's status comes from %q, its description says %q", name, got, a.Status.Source)
		}
		delete(rows, name)
	}
	for name := range rows {
		t.Errorf("docs/sessions.md has a row for %s, which is no agent", name)
	}
}

func TestDescriptions(t *testing.T) {
	for _, name := range agents.Names() {
		a, _ := agents.Get(name)
		if a.Tested == "" || a.Status.Source == "" {
			t.Errorf("%s does not say what is tested of it or where its status comes from", name)
		}
		if a.Package != "" && strings.LastIndex(a.Package, "@") < 1 {
			t.Errorf("%s's package %q pins no version", name, a.Package)
		}
		for _, h := range a.Hosts {
			if p, err := egress.ParsePattern(h); err != nil || p != h {
				t.Errorf("%s's host %q is no egress pattern: %v", name, h, err)
			}
		}
		if a.Files != nil {
			for _, f := range a.Files(agents.Session{Dir: "/workspace", ResumeID: "id", CredsBase: "http://127.0.0.1:4180"}) {
				if !strings.HasPrefix(f.Path, "/home/agent/") {
					t.Errorf("%s writes %s, outside the agent's home", name, f.Path)
				}
			}
		}
	}
}

// Codex's config is TOML that Codex reads: the provider at the proxy, the notify program.
func TestCodexConfig(t *testing.T) {
	var conf struct {
		ModelProvider  string   `toml:"model_provider"`
		Notify         []string `toml:"notify"`
		CheckUpdate    *bool    `toml:"check_for_update_on_startup"`
		ModelProviders map[string]struct {
			BaseURL string `toml:"base_url"`
			EnvKey  string `toml:"env_key"`
			WireAPI string `toml:"wire_api"`
		} `toml:"model_providers"`
		Projects map[string]struct {
			TrustLevel string `toml:"trust_level"`
		} `toml:"projects"`
	}
	files := codex.Agent.Files(agents.Session{Dir: `/workspace/.worktrees/a"b`, CredsBase: "http://127.0.0.1:4180"})
	if err := toml.Unmarshal(files[0].Content, &conf); err != nil {
		t.Fatalf("config.toml does not parse: %v\n%s", err, files[0].Content)
	}
	p := conf.ModelProviders[conf.ModelProvider]
	if p.BaseURL != "http://127.0.0.1:4180/openai/v1" || p.EnvKey != "OPENAI_API_KEY" || p.WireAPI != "responses" {
		t.Errorf("provider %+v", p)
	}
	if conf.Projects[`/workspace/.worktrees/a"b`].TrustLevel != "trusted" {
		t.Errorf("the working directory is not trusted: %+v", conf.Projects)
	}
	// Codex looks for no newer version of itself: the image pins it.
	if conf.CheckUpdate == nil || *conf.CheckUpdate {
		t.Errorf("check_for_update_on_startup is not false: %v", conf.CheckUpdate)
	}
	if len(conf.Notify) < 4 || conf.Notify[0] != "/opt/paddock/bin/paddock" || !strings.HasSuffix(conf.Notify[len(conf.Notify)-1], "-{id}.jsonl") {
		t.Errorf("notify %q", conf.Notify)
	}
}

// Every agent's command lines start its binary and leave no placeholder unexpanded.
func TestCommandLines(t *testing.T) {
	s := agents.Session{Name: "fix", ResumeID: "0b5e", Dir: "/workspace", Command: "make watch"}
	for _, name := range agents.Names() {
		a, _ := agents.Get(name)
		lines := map[string][]string{"launch": a.LaunchArgv(s), "resume": a.ResumeArgv(s), "ask": a.AskArgv(s, "hello"), "fork": a.ForkArgv(s, "1a2b")}
		for what, argv := range lines {
			if argv == nil {
				continue
			}
			if argv[0] != a.Binary && !(name == "shell" && argv[0] == "sh") {
				t.Errorf("%s's %s runs %q, not its binary %q", name, what, argv[0], a.Binary)
			}
			for _, arg := range argv {
				if strings.Contains(arg, "{") && arg != agents.SystemPrompt {
					t.Errorf("%s's %s keeps a placeholder: %q", name, what, arg)
				}
			}
		}
		if a.Ask != nil && !a.AskOnStdin && !strings.Contains(strings.Join(a.AskArgv(s, "hello"), " "), "hello") {
			t.Errorf("%s's ask argv does not carry the message", name)
		}
	}
}
