package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadBackup(t *testing.T) {
	t.Parallel()
	defaults := DefaultBackup()
	for _, tc := range []struct {
		name, content string
		want          Backup
		wantErr       string
	}{
		{name: "no file section gives the defaults", content: "default_backend = \"bwrap\"\n", want: defaults},
		{name: "an empty section gives the defaults", content: "[backup]\n", want: defaults},
		{name: "keys left out keep their defaults",
			content: "[backup]\nstore = \"s3://snaps/paddock\"\nendpoint = \"http://127.0.0.1:9000\"\nkeep = 10\n",
			want: Backup{Store: "s3://snaps/paddock", Endpoint: "http://127.0.0.1:9000", AccessKeyEnv: "AWS_ACCESS_KEY_ID",
				SecretKeyEnv: "AWS_SECRET_ACCESS_KEY", Keep: 10, MaxAge: Duration{720 * time.Hour}, MaxFileMB: 50, MaxWholeMB: 4096}},
		{name: "every key",
			content: "[backup]\nstore = \"~/backups\"\nendpoint = \"minio.lan:9000\"\nregion = \"eu-west-1\"\naccess_key_env = \"SNAP_ID\"\n" +
				"secret_key_env = \"SNAP_SECRET\"\nkey_command = \"pass show s3\"\nkeep = 0\nmax_age = \"0\"\nevery = \"6h\"\nmax_file_mb = 0\nmax_whole_mb = 0\n",
			want: Backup{Store: "~/backups", Endpoint: "minio.lan:9000", Region: "eu-west-1", AccessKeyEnv: "SNAP_ID", SecretKeyEnv: "SNAP_SECRET",
				KeyCommand: "pass show s3", Every: Duration{6 * time.Hour}}},
		{name: "unknown key names the line", content: "[backup]\nkeep = 3\nkeeep = 4\n", wantErr: `config.toml:3: unknown key "backup.keeep"`},
		{name: "a secret in the file is refused", content: "[backup]\naccess_key = \"AKIA\"\n", wantErr: `config.toml:2: unknown key "backup.access_key"`},
		{name: "negative keep", content: "[backup]\n\nkeep = -1\n", wantErr: "config.toml:3: [backup] keep: -1 is negative"},
		{name: "keep not a number", content: "[backup]\nkeep = \"all\"\n", wantErr: "config.toml:2:"},
		{name: "negative max_file_mb", content: "[backup]\nmax_file_mb = -5\n", wantErr: "config.toml:2: [backup] max_file_mb: -5 is negative"},
		{name: "negative max_whole_mb", content: "[backup]\nmax_whole_mb = -1\n", wantErr: "config.toml:2: [backup] max_whole_mb: -1 is negative"},
		{name: "max_age not a duration", content: "[backup]\nmax_age = \"a month\"\n", wantErr: `config.toml:2:`},
		{name: "max_age a bare number", content: "[backup]\nkeep = 1\nmax_age = 720\n", wantErr: `config.toml:3:`},
		{name: "negative max_age", content: "[backup]\nmax_age = \"-1h\"\n", wantErr: `config.toml:2:`},
		{name: "every too often", content: "[backup]\nevery = \"5s\"\n", wantErr: "config.toml:2: [backup] every: 5s is more often than every 10s"},
		{name: "relative store", content: "[backup]\nstore = \"backups\"\n", wantErr: "config.toml:2: [backup] store: \"backups\" must be an absolute directory"},
		{name: "store without a bucket", content: "[backup]\nstore = \"s3:///prefix\"\n", wantErr: "[backup] store: \"s3:///prefix\" names no bucket"},
		{name: "endpoint with a path", content: "[backup]\nendpoint = \"https://s3.example.com/bucket\"\n", wantErr: "config.toml:2: [backup] endpoint: \"https://s3.example.com/bucket\" must have no path"},
		{name: "endpoint with keys", content: "[backup]\nendpoint = \"https://id:secret@s3.example.com\"\n", wantErr: "[backup] endpoint: holds keys"},
		{name: "endpoint of another scheme", content: "[backup]\nendpoint = \"ftp://x\"\n", wantErr: "[backup] endpoint: must be http(s)://"},
		{name: "a key's value as its variable", content: "[backup]\nsecret_key_env = \"wJalrXUtnFEMI K7MDENG\"\n", wantErr: "[backup] secret_key_env: "},
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
				if strings.Contains(err.Error(), "secret@") || strings.Contains(err.Error(), "wJalrXUtnFEMI") {
					t.Errorf("the error repeats a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Backup != tc.want {
				t.Errorf("[backup] = %+v, want %+v", got.Backup, tc.want)
			}
		})
	}
}

func TestBackupDefaultsWithoutAFile(t *testing.T) {
	t.Parallel()
	c, err := Load(filepath.Join(t.TempDir(), "absent.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Backup != DefaultBackup() || c.Backup.Keep != 50 || c.Backup.MaxAge.Duration != 30*24*time.Hour ||
		c.Backup.Every.Duration != 0 || c.Backup.MaxFileMB != 50 {
		t.Errorf("[backup] of no file = %+v", c.Backup)
	}
}

func TestBackupLocation(t *testing.T) {
	t.Parallel()
	p, err := ForHome("/srv/ph")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		store, want string
		s3          bool
	}{
		{"", "/srv/ph/state/snapshots", false},
		{"/mnt/backup", "/mnt/backup", false},
		{"s3://b/p", "s3://b/p", true},
	} {
		b := Backup{Store: tc.store}
		if got := b.Location(p); got != tc.want || b.S3() != tc.s3 {
			t.Errorf("store %q: Location = %q, S3 = %v; want %q, %v", tc.store, got, b.S3(), tc.want, tc.s3)
		}
	}
}

func TestBackupKeys(t *testing.T) {
	t.Parallel()
	const access, secret = "AKIAEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	env := map[string]string{"AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret, "SNAP_ID": "other-id"}
	getenv := func(k string) string { return env[k] }
	noenv := func(string) string { return "" }
	for _, tc := range []struct {
		name    string
		b       Backup
		getenv  func(string) string
		want    S3Keys
		wantErr string
	}{
		{name: "from the default variables", b: DefaultBackup(), getenv: getenv, want: S3Keys{access, secret}},
		{name: "from variables named in the file", b: Backup{AccessKeyEnv: "SNAP_ID", SecretKeyEnv: "AWS_SECRET_ACCESS_KEY"}, getenv: getenv,
			want: S3Keys{"other-id", secret}},
		{name: "variables unset", b: Backup{Store: "s3://b", AccessKeyEnv: "SNAP_ID", SecretKeyEnv: "SNAP_SECRET"}, getenv: getenv,
			wantErr: "set SNAP_SECRET in the daemon's environment, or key_command in [backup]"},
		{name: "none set", b: DefaultBackup(), getenv: noenv, wantErr: "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		{name: "key_command wins", b: Backup{KeyCommand: fmt.Sprintf("printf '%s\\n%s\\n'", access, secret)}, getenv: noenv,
			want: S3Keys{access, secret}},
		{name: "key_command printing one word", b: Backup{KeyCommand: "echo " + secret}, getenv: getenv,
			wantErr: "key_command printed 1 words, want 2"},
		{name: "key_command failing", b: Backup{KeyCommand: "echo " + access + " " + secret + "; echo " + secret + " >&2; exit 3"}, getenv: getenv,
			wantErr: "key_command failed: exit status 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.b.Keys(t.Context(), tc.getenv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), access) {
					t.Errorf("the error shows a key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Keys = %q, %q; want %q, %q", got.Access, got.Secret, tc.want.Access, tc.want.Secret)
			}
		})
	}
}

// Keys printed by mistake, to a log or in a message, show nothing of themselves.
func TestS3KeysStayOutOfLogs(t *testing.T) {
	t.Parallel()
	k := S3Keys{Access: "AKIAEXAMPLE", Secret: "wJalrXUtnFEMI"}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("keys", "keys", k)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("keys", "keys", k)
	fmt.Fprintf(&buf, "%v %+v %#v %s", k, k, k, k)
	if out := buf.String(); strings.Contains(out, k.Access) || strings.Contains(out, k.Secret) {
		t.Errorf("printed keys show: %s", out)
	}
}
