package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, content, wantErr string
		want                   Config
	}{
		{name: "empty", content: ""},
		{name: "full", content: "default_backend = \"bwrap\"\nguest_binary = \"/opt/p\"\n[backends.bwrap]\nrootfs = \"/srv/r\"\n",
			want: Config{DefaultBackend: "bwrap", GuestBinary: "/opt/p", Backends: map[string]map[string]any{"bwrap": {"rootfs": "/srv/r"}}}},
		{name: "the guest binary under its former name", content: "agent_binary = \"/opt/p\"\n", want: Config{GuestBinary: "/opt/p"}},
		{name: "the guest binary under both names", content: "guest_binary = \"/opt/p\"\nagent_binary = \"/opt/q\"\n",
			wantErr: "agent_binary and guest_binary say the same: keep guest_binary"},
		{name: "syntax error names the line", content: "default_backend = \"bwrap\"\n\nagent_binary = = 1\n", wantErr: "config.toml:3:"},
		{name: "unknown key names the line", content: "# comment\ndefault_backendd = \"x\"\n", wantErr: `config.toml:2: unknown key "default_backendd"`},
		{name: "wrong type", content: "default_backend = 3\n", wantErr: "config.toml:1:"},
		{name: "relative guest binary", content: "guest_binary = \"paddock\"\n", wantErr: "guest_binary must be an absolute path"},
		{name: "relative guest binary under its former name", content: "agent_binary = \"paddock\"\n", wantErr: "guest_binary must be an absolute path"},
		{name: "the host's root as a rootfs", content: "[backends.bwrap]\nrootfs = \"/\"\n", wantErr: "[backends.bwrap] rootfs \"/\" is the host's own root"},
		{name: "notify", content: "[notify]\nwebhook = \"https://ntfy.sh/t\"\nformat = \"slack\"\nevents = [\"waiting\"]\nheaders = { Authorization = \"Bearer ${T}\" }\n",
			want: Config{Notify: Notify{Webhook: "https://ntfy.sh/t", Format: "slack", Events: []string{"waiting"}}}},
		{name: "notify webhook not http", content: "[notify]\nwebhook = \"ftp://x\"\n", wantErr: `[notify]: webhook "ftp://x" must be an http(s):// URL`},
		{name: "notify unknown format", content: "[notify]\nformat = \"teams\"\n", wantErr: `format must be one of ntfy, slack, json, got "teams"`},
		{name: "notify unknown event", content: "[notify]\nevents = [\"done\"]\n", wantErr: `events: "done" is not one of waiting, finished, exited`},
		{name: "notify contact", content: "[notify]\ncontact = \"me@x\"\n", wantErr: "must be a mailto: or https:// URL"},
		{name: "the host's root spelled otherwise", content: "[backends.bwrap]\nrootfs = \"/usr/..\"\n", wantErr: "is the host's own root"},
		{name: "checkpoints", content: "[checkpoints]\nkeep = 50\nmax_mb = 100\nexclude = [\"data/\", \"*.bin\"]\n"},
		{name: "checkpoints exclude outside the workspace", content: "[checkpoints]\nexclude = [\"../x\"]\n",
			wantErr: `[checkpoints]: exclude: "../x" is not a path relative to /workspace`},
		{name: "checkpoints keep negative", content: "[checkpoints]\nkeep = -1\n", wantErr: "[checkpoints]: keep and max_mb cannot be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Load(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.DefaultBackend != tc.want.DefaultBackend || got.GuestBinary != tc.want.GuestBinary ||
				len(got.Backends) != len(tc.want.Backends) || got.Notify.Webhook != tc.want.Notify.Webhook ||
				got.Notify.Format != tc.want.Notify.Format || len(got.Notify.Events) != len(tc.want.Notify.Events) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLoadMissingFileGivesDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(filepath.Join(t.TempDir(), "absent.toml"))
	if err != nil || c.DefaultBackend != "" {
		t.Fatalf("got %+v, %v", c, err)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	home := func(dir string) func(string) string {
		return func(k string) string {
			if k == "PADDOCK_HOME" {
				return dir
			}
			return ""
		}
	}
	p, err := ResolveEnv(home("/srv/ph"))
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []string{p.Config, p.State, p.Sandboxes, p.Cache, p.Socket, p.DB()} {
		if !strings.HasPrefix(got, "/srv/ph/") {
			t.Errorf("%s is not under PADDOCK_HOME", got)
		}
	}
	if _, err := ResolveEnv(home("/" + strings.Repeat("x", 100))); err == nil || !strings.Contains(err.Error(), "shorter directory") {
		t.Fatalf("a socket path over the limit: %v", err)
	}
}
