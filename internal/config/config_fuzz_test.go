package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad loads arbitrary bytes as the config file. Whatever the file holds, Load must
// not panic; a file it refuses gets an error naming the file; a file it accepts holds
// only what validation allows (an absolute guest binary, MCP servers each with a known
// transport and what that transport needs).
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"", "default_backend = \"bwrap\"\nguest_binary = \"/opt/p\"\n[backends.bwrap]\nrootfs = \"/srv/r\"\n",
		"default_backend = \"bwrap\"\n\nagent_binary = = 1\n", "# comment\ndefault_backendd = \"x\"\n",
		"default_backend = 3\n", "agent_binary = \"paddock\"\n", "guest_binary = \"/a\"\nagent_binary = \"/b\"\n",
		"[providers.anthropic]\nkey_command = \"pass show anthropic\"\n[providers.local]\nbase_url = \"http://127.0.0.1:8000/v1\"\nkey_env = \"LOCAL_KEY\"\n",
		"[mcp.files]\ntransport = \"stdio\"\ncommand = \"mcp-files\"\nargs = [\"--root\", \"/workspace\"]\nenv = { A = \"1\" }\n",
		"[mcp.web]\ntransport = \"http\"\nurl = \"http://127.0.0.1:7777/mcp\"\nheaders = { Authorization = \"Bearer ${TOKEN}\" }\n",
		"[mcp.bad]\ntransport = \"stdio\"\n", "[mcp.bad]\ntransport = \"ftp\"\n", "[mcp.bad]\ntransport = \"http\"\nurl = \"ftp://x\"\n",
		"[backends.docker]\ncpus = 2.5\nmemory = \"4g\"\nlist = [1, \"a\", { b = true }]\nwhen = 1979-05-27T07:32:00Z\n",
		"a.b.c = 1\n", "[[mcp]]\n", "agent_binary = \"\"\"\n/multi\nline\"\"\"\n", "\xff\xfe", "[backends]\nbwrap = 1\n",
		"default_backend = 'bwrap'\r\n", "[providers.anthropic]\nkey = \"sk-ant-...\"\nunknown = 1\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		path := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if c.GuestBinary != "" && !filepath.IsAbs(c.GuestBinary) {
			t.Fatalf("accepted a relative guest binary %q", c.GuestBinary)
		}
		for name, m := range c.MCP {
			switch {
			case m.Transport == "stdio" && m.Command != "":
			case m.Transport == "http" && (strings.HasPrefix(m.URL, "http://") || strings.HasPrefix(m.URL, "https://")):
			default:
				t.Fatalf("accepted [mcp.%s] %+v", name, m)
			}
		}
	})
}
