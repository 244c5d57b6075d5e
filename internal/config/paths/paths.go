// Package paths finds paddock's files. It imports nothing beyond the standard library,
// so the lean CLI front can find the daemon's socket and the contexts file cheaply.
package paths

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Paths are the places paddock reads and writes. With PADDOCK_HOME set, everything lives
// beneath it, so several isolated instances can run side by side; without it, the XDG
// base directories are used.
type Paths struct {
	// Home is PADDOCK_HOME when paths come from it, else empty.
	Home string
	// Config is the TOML configuration file.
	Config string
	// State is the directory of the SQLite database and daemon log.
	State string
	// Sandboxes is where backends keep per-sandbox files.
	Sandboxes string
	// Cache holds content-addressed guest binaries and host-side clones of git URLs.
	Cache string
	// Socket is the daemon's unix socket.
	Socket string
}

// DB is the SQLite database path.
func (p Paths) DB() string { return filepath.Join(p.State, "paddock.db") }

// KeyDir holds the provider keys `paddock key set` stores, one file per provider, beside
// the config: no sandbox sees the config's directory.
func (p Paths) KeyDir() string { return filepath.Join(filepath.Dir(p.Config), "keys") }

// LoginDir is where the daemon keeps the subscription logins `paddock login claude` and
// `paddock login codex` give it (NAME.json, mode 0600), beside the key files.
func (p Paths) LoginDir() string { return filepath.Join(filepath.Dir(p.Config), "logins") }

// DaemonLog is where a background daemon writes its log.
func (p Paths) DaemonLog() string { return filepath.Join(p.State, "daemon.log") }

// maxSocketPath is the longest unix socket path Linux accepts (sun_path minus the NUL).
const maxSocketPath = 107

// SystemConfigDir holds the configuration of a daemon run by root. Sandboxes that see
// the host's /etc never see it, whoever runs their daemon.
const SystemConfigDir = "/etc/paddock"

// Resolve computes Paths from the environment: PADDOCK_HOME, else the XDG base
// directories, else (for root) the system directories /etc, /var/lib, /var/cache, /run.
func Resolve() (Paths, error) { return ResolveEnv(os.Getenv) }

// ResolveEnv is Resolve reading the environment through getenv, so that one process can
// resolve the paths of several environments (a test's many homes).
func ResolveEnv(getenv func(string) string) (Paths, error) {
	if home := getenv("PADDOCK_HOME"); home != "" {
		return ForHome(home)
	}
	if os.Geteuid() == 0 {
		// A daemon run by root keeps its files where system services do. The sandbox user
		// must be able to reach the sandbox directories, and /root is not searchable.
		return checked(Paths{
			Config:    filepath.Join(SystemConfigDir, "config.toml"),
			State:     "/var/lib/paddock",
			Sandboxes: "/var/lib/paddock/sandboxes",
			Cache:     "/var/cache/paddock",
			Socket:    "/run/paddock/paddock.sock",
		})
	}
	userHome := getenv("HOME")
	if userHome == "" {
		return Paths{}, errors.New("cannot find a home directory: set HOME or PADDOCK_HOME")
	}
	xdg := func(env, fallback string) string {
		if v := getenv(env); v != "" && filepath.IsAbs(v) {
			return filepath.Join(v, "paddock")
		}
		return filepath.Join(userHome, fallback, "paddock")
	}
	state := xdg("XDG_STATE_HOME", ".local/state")
	socket := filepath.Join(state, "paddock.sock")
	if rt := getenv("XDG_RUNTIME_DIR"); rt != "" && filepath.IsAbs(rt) {
		socket = filepath.Join(rt, "paddock", "paddock.sock")
	}
	return checked(Paths{
		Config:    filepath.Join(xdg("XDG_CONFIG_HOME", ".config"), "config.toml"),
		State:     state,
		Sandboxes: filepath.Join(state, "sandboxes"),
		Cache:     xdg("XDG_CACHE_HOME", ".cache"),
		Socket:    socket,
	})
}

// ForHome returns the paths beneath one PADDOCK_HOME directory.
func ForHome(home string) (Paths, error) {
	abs, err := filepath.Abs(home)
	if err != nil {
		return Paths{}, fmt.Errorf("PADDOCK_HOME: %w", err)
	}
	return checked(Paths{
		Home:      abs,
		Config:    filepath.Join(abs, "config.toml"),
		State:     filepath.Join(abs, "state"),
		Sandboxes: filepath.Join(abs, "sandboxes"),
		Cache:     filepath.Join(abs, "cache"),
		Socket:    filepath.Join(abs, "paddock.sock"),
	})
}

func checked(p Paths) (Paths, error) {
	if len(p.Socket) > maxSocketPath {
		return p, fmt.Errorf("the daemon socket path %s is %d bytes, longer than the %d a unix socket allows: set PADDOCK_HOME to a shorter directory",
			p.Socket, len(p.Socket), maxSocketPath)
	}
	return p, nil
}

// MkdirAll creates the directories paddock writes to, private to the user. As root
// they are searchable but not listable by others (0711): sandboxes run as an
// unprivileged uid that must reach its own directories by path.
func (p Paths) MkdirAll() error {
	mode := os.FileMode(0o700)
	if os.Geteuid() == 0 {
		mode = 0o711
	}
	for _, d := range []string{p.State, p.Sandboxes, p.Cache, filepath.Dir(p.Socket)} {
		if err := os.MkdirAll(d, mode); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	if p.Home != "" && os.Geteuid() == 0 {
		for _, d := range []string{p.Home, p.State, p.Sandboxes, p.Cache} {
			if err := os.Chmod(d, mode); err != nil {
				return err
			}
		}
	}
	return nil
}
