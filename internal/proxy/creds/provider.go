// Package creds is the credential proxy: the daemon holds the real API keys of the model
// providers, and a sandbox reaches a provider only through this proxy, presenting a
// placeholder key. The proxy checks the placeholder, strips every credential the sandbox
// sent, injects the real one for the provider's own API paths only, and streams the
// answer back unbuffered. The real key never enters a sandbox.
package creds

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/config"
)

// Provider is one model provider the proxy serves under /NAME/ (or its Route).
type Provider struct {
	// Name is the provider's name: anthropic, openai, gemini, or one the user declared.
	Name string
	// Route is the path prefix inside the proxy, e.g. "/anthropic" or "/openai/v1".
	Route string
	// Upstream is the provider's base URL; the path after Route is appended to it.
	Upstream *url.URL
	// Paths are the path prefixes (after Route) the key is injected for; empty means all.
	Paths []string
	// inject sets the real credential on an outgoing request.
	inject func(h http.Header, q url.Values, key string)
	// Login is the subscription login (LoginClaude, LoginCodex) that, while the daemon
	// holds it, stands for the provider's key; "" for none.
	Login string
	// wire is the API the provider speaks (WireAnthropic...), whose model calls the
	// proxy meters; "" for routes that are not model providers (MCP servers).
	wire string
	// Key returns the real key.
	key *keySource
	// SandboxEnv maps environment variables for the sandbox to values, where {base} is
	// the proxy URL of this provider and {token} the sandbox's placeholder key.
	SandboxEnv map[string]string
}

// Settings are one provider's entry of the config file ([providers.NAME]).
type Settings = config.Provider

// ChatGPT is the provider of ChatGPT's backend, where Codex signed in with a ChatGPT
// login sends its model calls; it has no API key, only the Codex login.
const ChatGPT = "chatgpt"

// builtin describes the providers paddock knows.
var builtin = map[string]struct {
	route, base, baseEnv, keyEnv, wire, login string
	paths                                     []string
	inject                                    func(h http.Header, q url.Values, key string)
	env                                       map[string]string
}{
	"anthropic": {
		route: "/anthropic", base: "https://api.anthropic.com", baseEnv: "ANTHROPIC_BASE_URL", keyEnv: "ANTHROPIC_API_KEY", wire: WireAnthropic,
		login:  LoginClaude,
		paths:  []string{"/v1/"},
		inject: func(h http.Header, _ url.Values, key string) { h.Set("X-Api-Key", key) },
		env:    map[string]string{"ANTHROPIC_BASE_URL": "{base}", "ANTHROPIC_API_KEY": "{token}"},
	},
	"openai": {
		route: "/openai/v1", base: "https://api.openai.com/v1", baseEnv: "OPENAI_BASE_URL", keyEnv: "OPENAI_API_KEY", wire: WireOpenAI,
		inject: bearer,
		env:    map[string]string{"OPENAI_BASE_URL": "{base}", "OPENAI_API_KEY": "{token}"},
	},
	// Codex in ChatGPT mode: its model calls (codex/responses), its model list
	// (codex/models) and its account, settings and rate-limit look-ups (wham/). Its
	// telemetry (codex/analytics-events) and plugin directory (ps/) are refused.
	ChatGPT: {
		route: "/chatgpt", base: "https://chatgpt.com", baseEnv: "PADDOCK_CHATGPT_BASE_URL", wire: WireOpenAI, login: LoginCodex,
		paths:  []string{"/backend-api/codex/responses", "/backend-api/codex/models", "/backend-api/wham/"},
		inject: bearer,
	},
	"gemini": {
		route: "/gemini", base: "https://generativelanguage.googleapis.com", baseEnv: "GOOGLE_GEMINI_BASE_URL", keyEnv: "GEMINI_API_KEY", wire: WireGemini,
		paths:  []string{"/v1beta/", "/v1/", "/upload/"},
		inject: func(h http.Header, _ url.Values, key string) { h.Set("X-Goog-Api-Key", key) },
		env:    map[string]string{"GOOGLE_GEMINI_BASE_URL": "{base}", "GEMINI_API_KEY": "{token}", "GOOGLE_API_KEY": "{token}"},
	},
}

func bearer(h http.Header, _ url.Values, key string) { h.Set("Authorization", "Bearer "+key) }

// Providers builds the provider set from the config's [providers.NAME] tables, the
// daemon's environment and the key files in keyDir (keyDir/NAME, written by `paddock key
// set`; "" for none). The built-in providers are always present (a request to one without
// a key gets a clear error); any other name is an OpenAI-compatible endpoint and needs a
// base_url.
func Providers(settings map[string]Settings, getenv func(string) string, keyDir string) (map[string]*Provider, error) {
	out := map[string]*Provider{}
	for name, b := range builtin {
		s := settings[name]
		base := s.BaseURL
		if base == "" {
			base = getenv(b.baseEnv)
		}
		if base == "" {
			base = b.base
		}
		keyEnv := s.KeyEnv
		if keyEnv == "" {
			keyEnv = b.keyEnv
		}
		p, err := newProvider(name, b.route, base, b.paths, b.inject, b.env, s, keyEnv, getenv)
		if err != nil {
			return nil, err
		}
		p.wire, p.Login = b.wire, b.login
		out[name] = p
	}
	for name, s := range settings {
		if _, ok := builtin[name]; ok {
			continue
		}
		if !validName(name) {
			return nil, fmt.Errorf("providers.%s: a provider name is lowercase letters, digits and '-'", name)
		}
		if s.BaseURL == "" {
			return nil, fmt.Errorf("providers.%s: base_url is required for an OpenAI-compatible provider", name)
		}
		upper := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		keyEnv := s.KeyEnv
		if keyEnv == "" {
			keyEnv = upper + "_API_KEY"
		}
		env := map[string]string{"PADDOCK_" + upper + "_BASE_URL": "{base}", "PADDOCK_" + upper + "_API_KEY": "{token}"}
		p, err := newProvider(name, "/"+name, s.BaseURL, nil, bearer, env, s, keyEnv, getenv)
		if err != nil {
			return nil, err
		}
		p.wire = WireOpenAI
		out[name] = p
	}
	if keyDir != "" {
		for name, p := range out {
			if name != ChatGPT { // a login, never a key
				p.key.file = filepath.Join(keyDir, name)
			}
		}
	}
	return out, nil
}

func validName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func newProvider(name, route, base string, paths []string, inject func(http.Header, url.Values, string),
	env map[string]string, s Settings, keyEnv string, getenv func(string) string) (*Provider, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("providers.%s: base URL %q must be http(s)://host[/path]", name, base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &Provider{Name: name, Route: route, Upstream: u, Paths: paths, inject: inject, SandboxEnv: env,
		key: &keySource{literal: s.Key, command: s.KeyCommand, env: keyEnv, getenv: getenv}}, nil
}

// Key returns the provider's real key, for a caller on the host (the host-side agent).
func (p *Provider) Key(ctx context.Context) (string, error) { return p.key.get(ctx, p.Name) }

// KeySource says where the provider's key comes from, without reading it: "config",
// "command", "env" or "file"; "" when it has none. A key_command is not run, so
// "command" says only that one is configured.
func (p *Provider) KeySource() string { return p.key.source() }

// KeyEnv is the environment variable of the daemon the key is read from, when that is
// where it comes from ("" otherwise): a name to show, never the key.
func (p *Provider) KeyEnv() string {
	if p.key.source() != "env" {
		return ""
	}
	return p.key.env
}

// KeyFile is the file `paddock key set` writes the provider's key to, "" when the daemon
// keeps no key files.
func (p *Provider) KeyFile() string { return p.key.file }

// ErrNoKey is returned when a provider has no credential configured.
var ErrNoKey = errors.New("no credential")

// keySource finds a provider's key: the literal key, else the command, else the
// environment variable, else the key file. A command's answer is kept for keyTTL; the
// file is read at each use, so a key set while the daemon runs takes effect at once.
type keySource struct {
	literal, command, env, file string
	getenv                      func(string) string

	mu      sync.Mutex
	cached  string
	fetched time.Time
}

const keyTTL = 10 * time.Minute

func (k *keySource) get(ctx context.Context, provider string) (string, error) {
	if k.literal != "" {
		return k.literal, nil
	}
	if k.command != "" {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.cached != "" && time.Since(k.fetched) < keyTTL {
			return k.cached, nil
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", k.command)
		cmd.Env = os.Environ()
		out, err := cmd.Output()
		key := strings.TrimSpace(string(out))
		if err != nil || key == "" {
			return "", fmt.Errorf("provider %s: key_command failed (%v): %w", provider, err, ErrNoKey)
		}
		k.cached, k.fetched = key, time.Now()
		return key, nil
	}
	if v := k.getenv(k.env); v != "" {
		return v, nil
	}
	if v := k.readFile(); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("provider %s: run `paddock key set %s`, or set %s in the daemon's environment or key_command in [providers.%s]: %w",
		provider, provider, k.env, provider, ErrNoKey)
}

func (k *keySource) source() string {
	switch {
	case k.literal != "":
		return "config"
	case k.command != "":
		return "command"
	case k.getenv(k.env) != "":
		return "env"
	case k.readFile() != "":
		return "file"
	}
	return ""
}

// readFile returns the key in the key file, "" when there is none.
func (k *keySource) readFile() string {
	if k.file == "" {
		return ""
	}
	data, err := os.ReadFile(k.file)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// MCPRoute is the proxy path prefix of a declared MCP server.
func MCPRoute(name string) string { return "/mcp/" + name }

// MCPProvider routes a declared http MCP server through the proxy, so that the headers
// it needs (tokens) are added by the daemon and never enter the sandbox. In a header
// value, ${NAME} is the daemon's environment variable NAME, read at each request.
func MCPProvider(name, rawURL string, headers map[string]string, getenv func(string) string) (*Provider, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mcp.%s: url %q must be http(s)://host[/path]", name, rawURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	inject := func(h http.Header, _ url.Values, _ string) {
		for k, v := range headers {
			h.Set(k, os.Expand(v, getenv))
		}
	}
	return &Provider{Name: "mcp-" + name, Route: MCPRoute(name), Upstream: u, inject: inject,
		key: &keySource{literal: "-"}}, nil
}
