package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const commented = `# paddock's configuration
default_backend = "bwrap"   # the laptop's

# The cluster at work.
[backends.kubernetes]
namespace = "team"  # shared with CI
storage_size = "10Gi"

[backends.docker]
runtime = "runsc"
`

func TestSet(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		key, value string
		want       string // the whole file after
	}{
		{"backends.kubernetes.namespace", `"mine"`, strings.Replace(commented, `namespace = "team"  # shared with CI`, `namespace = "mine"  # shared with CI`, 1)},
		{"default_backend", `"docker"`, strings.Replace(commented, `default_backend = "bwrap"   # the laptop's`, `default_backend = "docker"  # the laptop's`, 1)},
		{"backends.kubernetes.pids_limit", "512", strings.Replace(commented, "storage_size = \"10Gi\"\n", "storage_size = \"10Gi\"\npids_limit = 512\n", 1)},
		{"idle_stop", `"2h"`, strings.Replace(commented, "default_backend = \"bwrap\"   # the laptop's\n", "default_backend = \"bwrap\"   # the laptop's\nidle_stop = \"2h\"\n", 1)},
		{"backends.bwrap.rootfs", `"/srv/r"`, commented + "\n[backends.bwrap]\nrootfs = \"/srv/r\"\n"},
	} {
		got, err := Set([]byte(commented), c.key, c.value)
		if err != nil {
			t.Errorf("%s: %v", c.key, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s = %s:\n%s\nwant:\n%s", c.key, c.value, got, c.want)
		}
	}
	for key, text := range map[string]string{
		"backends.x.y":  "[[backends.x]]\ny = 1\n",
		"mcp.a.args":    "[mcp.a]\nargs = [\n  \"x\",\n]\n",
		"bad key":       "",
		"run..provider": "",
	} {
		if _, err := Set([]byte(text), key, "1"); err == nil {
			t.Errorf("%s in %q: set, want refused", key, text)
		}
	}
	if got := Value("docker"); got != `"docker"` {
		t.Errorf("Value(docker) = %s", got)
	}
	if got := Value("512"); got != "512" {
		t.Errorf("Value(512) = %s", got)
	}
}

// TestEdit: a key this version does not know, or a value of the wrong kind, is refused
// and the file left as it was.
func TestEdit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(path, []byte(commented), 0o600)
	if _, err := Edit(path, "default_backnd", "docker"); err == nil || !strings.Contains(err.Error(), `unknown key "default_backnd"`) {
		t.Errorf("an unknown key: %v", err)
	}
	if _, err := Edit(path, "idle_stop", "soon"); err == nil {
		t.Error("idle_stop = soon was set")
	}
	if data, _ := os.ReadFile(path); string(data) != commented {
		t.Fatalf("a refused edit changed the file:\n%s", data)
	}
	if v, err := Edit(path, "backends.kubernetes.namespace", "mine"); err != nil || v != `"mine"` {
		t.Fatalf("Edit: %q %v", v, err)
	}
	c, err := Load(path)
	if err != nil || c.Backends["kubernetes"]["namespace"] != "mine" || c.DefaultBackend != "bwrap" {
		t.Fatalf("after the edit: %+v %v", c.Backends, err)
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), "# The cluster at work.") || !strings.Contains(string(data), "# shared with CI") {
		t.Errorf("the comments are gone:\n%s", data)
	}
}
