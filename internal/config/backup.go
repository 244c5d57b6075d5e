package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Backup is the config's [backup] section: where snapshots of sandboxes are kept, how
// the daemon reaches an S3 store, and how many snapshots it keeps. Load fills in the
// defaults (DefaultBackup) for the keys the file leaves out.
type Backup struct {
	// Store is where snapshots go: a directory ("~/backups/paddock"; a leading ~/ is
	// the daemon user's home) or an S3 bucket ("s3://BUCKET" or "s3://BUCKET/PREFIX").
	// Empty means the directory "snapshots" in the state directory (see Location).
	Store string `toml:"store"`
	// Endpoint is the S3 server, e.g. "http://127.0.0.1:9000" for a MinIO beside the
	// daemon; without a scheme it is https. Empty means AWS.
	Endpoint string `toml:"endpoint"`
	// Region is the bucket's region; empty lets the client find it out.
	Region string `toml:"region"`
	// AccessKeyEnv names the daemon's environment variable that holds the S3 access key
	// (keys never belong in this file). Default AWS_ACCESS_KEY_ID.
	AccessKeyEnv string `toml:"access_key_env"`
	// SecretKeyEnv names the daemon's environment variable that holds the S3 secret key.
	// Default AWS_SECRET_ACCESS_KEY.
	SecretKeyEnv string `toml:"secret_key_env"`
	// KeyCommand, when set, is run by the daemon with sh -c instead of reading the
	// environment; its output is "ACCESS_KEY SECRET_KEY" (a password manager).
	KeyCommand string `toml:"key_command"`
	// Keep is how many snapshots of each sandbox are kept, the newest; 0 means no limit
	// by count. Default 50.
	Keep int `toml:"keep"`
	// MaxAge is how old a snapshot may grow before it is removed ("720h"); "0" means
	// no limit by age. Default 720h (30 days).
	MaxAge Duration `toml:"max_age"`
	// Every is how often each sandbox is snapshotted on its own ("6h"); empty or "0"
	// means never (snapshots are taken by hand). At least 10 seconds.
	Every Duration `toml:"every"`
	// MaxFileMB is the size, in MiB, above which a file is left out of a snapshot;
	// 0 means no limit. Default 50.
	MaxFileMB int `toml:"max_file_mb"`
	// MaxWholeMB is the most, in MiB, one snapshot takes of the directories it keeps
	// whole (deliverables, agents' conversations); a file that would pass it is left
	// out. 0 means no limit. Default 4096.
	MaxWholeMB int `toml:"max_whole_mb"`
}

// DefaultBackup is the [backup] section of a config file that has none.
func DefaultBackup() Backup {
	return Backup{
		AccessKeyEnv: "AWS_ACCESS_KEY_ID",
		SecretKeyEnv: "AWS_SECRET_ACCESS_KEY",
		Keep:         50,
		MaxAge:       Duration{720 * time.Hour},
		MaxFileMB:    50,
		MaxWholeMB:   4096,
	}
}

// minEvery is the shortest Backup.Every: more often would snapshot busy sandboxes
// without pause.
const minEvery = 10 * time.Second

// Duration is a time.Duration written in the config file as a string, "720h" or "90m".
// A bare number is refused rather than read as nanoseconds.
type Duration struct {
	time.Duration
}

// UnmarshalText reads a duration such as "720h"; "" is zero. A negative one is refused.
func (d *Duration) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		d.Duration = 0
		return nil
	}
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return &durationError{text: string(text), problem: "is not a duration such as \"720h\" or \"90m\""}
	}
	if v < 0 {
		return &durationError{text: string(text), problem: "is negative"}
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as UnmarshalText reads it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// durationError is a value Duration refused.
type durationError struct {
	text, problem string
}

func (e *durationError) Error() string { return fmt.Sprintf("%q %s", e.text, e.problem) }

// describeDuration names the line of a duration the decoder refused without saying
// where (a bare number: the decoder places only its errors about strings), or returns
// nil for any other error.
func describeDuration(path string, data []byte, err error) error {
	var de *durationError
	if !errors.As(err, &de) {
		return nil
	}
	var te *toml.DecodeError
	if errors.As(err, &te) {
		return nil
	}
	for _, key := range []string{"max_age", "every"} {
		if line, raw := valueOf(data, "backup", key); line > 0 && raw == de.text {
			return fmt.Errorf("config %s:%d: [backup] %s: %w", path, line, key, de)
		}
	}
	return fmt.Errorf("config %s: [backup]: %w", path, de)
}

// S3 says whether the store is an S3 bucket rather than a directory.
func (b Backup) S3() bool { return strings.HasPrefix(b.Store, "s3://") }

// Location is where snapshots go: Store, or the directory "snapshots" in p's state
// directory when Store is empty.
func (b Backup) Location(p Paths) string {
	if b.Store == "" {
		return filepath.Join(p.State, "snapshots")
	}
	return b.Store
}

// S3Keys are the keys an S3 store is reached with. Printed (fmt, slog) they show as
// redacted, so that they cannot end up in a log by mistake.
type S3Keys struct {
	// Access is the access key id.
	Access string
	// Secret is the secret key.
	Secret string
}

// String hides the keys.
func (S3Keys) String() string { return "S3Keys(redacted)" }

// GoString hides the keys from %#v.
func (S3Keys) GoString() string { return "S3Keys(redacted)" }

// LogValue hides the keys from slog.
func (S3Keys) LogValue() slog.Value { return slog.StringValue("redacted") }

// keyCommandTimeout bounds a key_command (a password manager may wait for a prompt no
// one answers).
const keyCommandTimeout = 30 * time.Second

// Keys returns the S3 keys: key_command's output when it is set, else the environment
// variables named by access_key_env and secret_key_env, read with getenv (os.Getenv in
// the daemon). Errors say what to set; they never hold a key or the command's output.
func (b Backup) Keys(ctx context.Context, getenv func(string) string) (S3Keys, error) {
	if b.KeyCommand != "" {
		ctx, cancel := context.WithTimeout(ctx, keyCommandTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", b.KeyCommand)
		cmd.Env = os.Environ()
		out, err := cmd.Output()
		if ctx.Err() == context.DeadlineExceeded {
			return S3Keys{}, fmt.Errorf("[backup] key_command did not finish within %s", keyCommandTimeout)
		}
		if err != nil {
			// Not the output, nor the error's Stderr: either may hold a key.
			return S3Keys{}, fmt.Errorf("[backup] key_command failed: %w", exitError(err))
		}
		fields := strings.Fields(string(out))
		if len(fields) != 2 {
			return S3Keys{}, fmt.Errorf("[backup] key_command printed %d words, want 2: ACCESS_KEY SECRET_KEY", len(fields))
		}
		return S3Keys{Access: fields[0], Secret: fields[1]}, nil
	}
	accessEnv, secretEnv := b.AccessKeyEnv, b.SecretKeyEnv
	if accessEnv == "" {
		accessEnv = DefaultBackup().AccessKeyEnv
	}
	if secretEnv == "" {
		secretEnv = DefaultBackup().SecretKeyEnv
	}
	k := S3Keys{Access: getenv(accessEnv), Secret: getenv(secretEnv)}
	var missing []string
	if k.Access == "" {
		missing = append(missing, accessEnv)
	}
	if k.Secret == "" {
		missing = append(missing, secretEnv)
	}
	if len(missing) > 0 {
		return S3Keys{}, fmt.Errorf("the S3 store %s needs keys: set %s in the daemon's environment, or key_command in [backup]",
			b.Store, strings.Join(missing, " and "))
	}
	return k, nil
}

// exitError keeps what an exec error says about the command's end, leaving out the
// standard error output an *exec.ExitError carries.
func exitError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return errors.New(ee.ProcessState.String())
	}
	return err
}

// validate checks the [backup] values a type alone does not, naming the line of a bad
// one in data (the file, at path).
func (b Backup) validate(path string, data []byte) error {
	bad := func(key, format string, args ...any) error {
		where := path
		if line := lineOf(data, "backup", key); line > 0 {
			where = fmt.Sprintf("%s:%d", path, line)
		}
		return fmt.Errorf("config %s: [backup] %s: %s", where, key, fmt.Sprintf(format, args...))
	}
	if b.Store != "" {
		if rest, ok := strings.CutPrefix(b.Store, "s3://"); ok {
			if bucket, _, _ := strings.Cut(rest, "/"); bucket == "" {
				return bad("store", "%q names no bucket: s3://BUCKET or s3://BUCKET/PREFIX", b.Store)
			}
		} else if !filepath.IsAbs(b.Store) && b.Store != "~" && !strings.HasPrefix(b.Store, "~/") {
			return bad("store", "%q must be an absolute directory, ~/DIR or s3://BUCKET/PREFIX", b.Store)
		}
	}
	if b.Endpoint != "" {
		raw := b.Endpoint
		if !strings.Contains(raw, "://") {
			raw = "https://" + raw
		}
		u, err := url.Parse(raw)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return bad("endpoint", "must be http(s)://HOST[:PORT] or HOST[:PORT]")
		case u.User != nil:
			return bad("endpoint", "holds keys: put them in the daemon's environment (access_key_env, secret_key_env) or behind key_command")
		case strings.Trim(u.Path, "/") != "" || u.RawQuery != "":
			return bad("endpoint", "%q must have no path (the bucket goes in store = \"s3://BUCKET\")", b.Endpoint)
		}
	}
	for key, name := range map[string]string{"access_key_env": b.AccessKeyEnv, "secret_key_env": b.SecretKeyEnv} {
		if strings.ContainsAny(name, "=$ \t") {
			// Not quoted: it may well be the key itself.
			return bad(key, "must be the name of an environment variable, not its value")
		}
	}
	if b.Keep < 0 {
		return bad("keep", "%d is negative (0 keeps any number)", b.Keep)
	}
	if b.MaxWholeMB < 0 {
		return bad("max_whole_mb", "%d is negative (0 means no limit)", b.MaxWholeMB)
	}
	if b.MaxFileMB < 0 {
		return bad("max_file_mb", "%d is negative (0 means no limit)", b.MaxFileMB)
	}
	if b.Every.Duration != 0 && b.Every.Duration < minEvery {
		return bad("every", "%s is more often than every %s", b.Every.Duration, minEvery)
	}
	return nil
}

// lineOf returns the line of the value of table.key in the TOML document data, or 0
// when it cannot be found (a dotted key, an inline table).
func lineOf(data []byte, table, key string) int {
	line, _ := valueOf(data, table, key)
	return line
}

// valueOf returns the line and the text of the value of table.key in the TOML document
// data, or 0 and "" when it cannot be found.
func valueOf(data []byte, table, key string) (line int, raw string) {
	p := unstable.Parser{}
	p.Reset(data)
	var current string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			current = joinKey(e.Key())
		case unstable.KeyValue:
			if current == table && joinKey(e.Key()) == key {
				v := e.Value()
				return p.Shape(v.Raw).Start.Line, string(v.Data)
			}
		}
	}
	return 0, ""
}

func joinKey(it unstable.Iterator) string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, ".")
}
