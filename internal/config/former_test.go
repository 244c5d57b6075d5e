package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFormerNamesWarnOnce: the guest binary named by the config key agent_binary or the
// environment variable PADDOCK_AGENT_BINARY is still the one injected, and each former
// name draws one line on stderr naming the new one, however often it is read.
// It stays serial: it reads the process environment, as paddock does, and the warnings
// are once per process (deprecationOut, warned).
func TestFormerNamesWarnOnce(t *testing.T) {
	var out strings.Builder
	deprecationOut = &out
	warned.Clear()
	t.Cleanup(func() { deprecationOut = os.Stderr })
	t.Setenv("PADDOCK_GUEST_BINARY", "")
	t.Setenv("PADDOCK_AGENT_BINARY", "")

	path := filepath.Join(t.TempDir(), "config.toml")
	write := func(content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	load := func() Config {
		c, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	write("guest_binary = \"/opt/new\"\n")
	if c := load(); c.GuestSource() != "/opt/new" || out.Len() != 0 {
		t.Fatalf("guest_binary: source %q, warned %q; want /opt/new and no warning", c.GuestSource(), out.String())
	}
	write("agent_binary = \"/opt/old\"\n")
	load()
	if c := load(); c.GuestSource() != "/opt/old" {
		t.Errorf("agent_binary: source %q, want /opt/old", c.GuestSource())
	}
	if want := "paddock: the config key agent_binary is deprecated: use guest_binary instead\n"; out.String() != want {
		t.Errorf("agent_binary read twice warned %q, want %q", out.String(), want)
	}

	out.Reset()
	t.Setenv("PADDOCK_GUEST_BINARY", "/env/new")
	if c := load(); c.GuestSource() != "/env/new" || out.Len() != 0 {
		t.Fatalf("PADDOCK_GUEST_BINARY: source %q, warned %q; want /env/new over the config and no warning", c.GuestSource(), out.String())
	}
	t.Setenv("PADDOCK_GUEST_BINARY", "")
	t.Setenv("PADDOCK_AGENT_BINARY", "/env/old")
	c := load()
	if got, again := c.GuestSource(), c.GuestSource(); got != "/env/old" || again != got {
		t.Errorf("PADDOCK_AGENT_BINARY: source %q then %q, want /env/old over the config", got, again)
	}
	if want := "paddock: PADDOCK_AGENT_BINARY is deprecated: use PADDOCK_GUEST_BINARY instead\n"; out.String() != want {
		t.Errorf("PADDOCK_AGENT_BINARY read twice warned %q, want %q", out.String(), want)
	}
}
