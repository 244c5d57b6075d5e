package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/proxy/creds"
)

// Config is the daemon's configuration, read from one TOML file. Every field has a
// working default, so an absent file is fine; a file that does not parse is an error.
type Config struct {
	// DefaultBackend names the backend `paddock up` uses without --backend. Empty means
	// the first available of bwrap, docker.
	DefaultBackend string `toml:"default_backend"`
	// AgentBinary is a static linux paddock binary to inject as the guest agent. Empty
	// means this executable, which must then be static (it is, as released).
	AgentBinary string `toml:"agent_binary"`
	// Backends holds each backend's own settings, e.g. [backends.bwrap] rootfs = "/srv/rootfs".
	Backends map[string]map[string]any `toml:"backends"`
	// Providers configures the credential proxy: [providers.anthropic] key_command = "...".
	// Names other than anthropic, openai and gemini declare OpenAI-compatible endpoints.
	Providers map[string]creds.Settings `toml:"providers"`
	// MCP declares MCP servers made available in every sandbox: [mcp.NAME].
	MCP map[string]MCPServer `toml:"mcp"`
}

// MCPServer is one MCP server of the config file.
type MCPServer struct {
	// Transport is "stdio" (a command run inside the sandbox) or "http".
	Transport string `toml:"transport"`
	// Command, Args and Env start a stdio server inside the sandbox.
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
	// URL is an http server's address. One on the host's loopback is reached from the
	// sandbox on the same 127.0.0.1 port, so the URL needs no rewriting.
	URL string `toml:"url"`
	// Headers are sent to an http server by the daemon's credential proxy, never by the
	// sandbox: "${NAME}" in a value is the daemon's environment variable NAME.
	Headers map[string]string `toml:"headers"`
}

// Load reads the config file at path. A missing file gives the defaults; a file that
// does not parse, or that names an unknown key, is an error naming the line.
func Load(path string) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read config: %w", err)
	}
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, describe(path, err)
	}
	return c, c.validate(path)
}

func describe(path string, err error) error {
	var se *toml.StrictMissingError
	if errors.As(err, &se) && len(se.Errors) > 0 {
		var parts []string
		for _, e := range se.Errors {
			row, _ := e.Position()
			parts = append(parts, fmt.Sprintf("config %s:%d: unknown key %q", path, row, strings.Join(e.Key(), ".")))
		}
		return errors.New(strings.Join(parts, "\n"))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Errorf("config %s:%d:%d: %s", path, row, col, de.Error())
	}
	return fmt.Errorf("config %s: %w", path, err)
}

func (c Config) validate(path string) error {
	if c.AgentBinary != "" && !strings.HasPrefix(c.AgentBinary, "/") {
		return fmt.Errorf("config %s: agent_binary must be an absolute path, got %q", path, c.AgentBinary)
	}
	for name, opts := range c.Backends {
		if rootfs, ok := opts["rootfs"].(string); ok && rootfs != "" && backend.IsHostRoot(rootfs) {
			return fmt.Errorf("config %s: [backends.%s] rootfs %q is the host's own root filesystem: a sandbox on it would see every file of the host; %s",
				path, name, rootfs, backend.RootfsHint)
		}
	}
	for name, m := range c.MCP {
		switch m.Transport {
		case "stdio":
			if m.Command == "" {
				return fmt.Errorf("config %s: [mcp.%s]: a stdio server needs a command", path, name)
			}
		case "http":
			if !strings.HasPrefix(m.URL, "http://") && !strings.HasPrefix(m.URL, "https://") {
				return fmt.Errorf("config %s: [mcp.%s]: an http server needs url = \"http(s)://...\"", path, name)
			}
		default:
			return fmt.Errorf("config %s: [mcp.%s]: transport must be \"stdio\" or \"http\", got %q", path, name, m.Transport)
		}
	}
	return nil
}
