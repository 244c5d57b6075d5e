package config

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/paddockhq/paddock/internal/config/cost"
	"github.com/paddockhq/paddock/internal/hostroot"
)

// Config is the daemon's configuration, read from one TOML file. Every field has a
// working default, so an absent file is fine; a file that does not parse is an error.
type Config struct {
	// DefaultBackend names the backend `paddock up` uses without --backend. Empty means
	// the first available of bwrap, docker.
	DefaultBackend string `toml:"default_backend"`
	// GuestBinary is a static linux paddock binary to inject as the guest. Empty
	// means paddock-guest beside this executable, else this executable, which must then
	// be static (it is, as released). GuestSource says which one is used.
	GuestBinary string `toml:"guest_binary"`
	// FormerGuestBinary is guest_binary under its former name, agent_binary: Load moves
	// it into GuestBinary and says once that it is deprecated.
	FormerGuestBinary string `toml:"agent_binary"`
	// Backends holds each backend's own settings, e.g. [backends.bwrap] rootfs = "/srv/rootfs".
	Backends map[string]map[string]any `toml:"backends"`
	// Providers configures the credential proxy: [providers.anthropic] key_command = "...".
	// Names other than anthropic, openai and gemini declare OpenAI-compatible endpoints.
	Providers map[string]Provider `toml:"providers"`
	// Prices are what models cost, for the estimates of `paddock usage` and budgets:
	// [prices."MODEL"] input_per_mtok = 3.0 (US dollars per million tokens; also
	// output_per_mtok, cache_read_per_mtok, cache_write_per_mtok). A key is a model's
	// name or a prefix of it; it adds to and overrides metering.DefaultPrices (internal/metering).
	Prices map[string]cost.Price `toml:"prices"`
	// Budget is every sandbox's budget unless `paddock budget set` gives it its own:
	// [budget] usd = 10, tokens = 5000000 (either or both).
	Budget cost.Limit `toml:"budget"`
	// MCP declares MCP servers made available in every sandbox: [mcp.NAME].
	MCP map[string]MCPServer `toml:"mcp"`
	// Notify says where to tell the user that a session waits for them or finished.
	Notify Notify `toml:"notify"`
	// Backup says where snapshots of sandboxes are kept and how many: [backup].
	Backup Backup `toml:"backup"`
	// IdleStop stops a running sandbox unused for this long ("2h"), after a final
	// snapshot; the next up, chat or attach starts it again. Empty means never.
	IdleStop Duration `toml:"idle_stop"`
	// Run configures the host-side agent of `paddock run`: [run].
	Run Run `toml:"run"`
	// Checkpoints bounds the checkpoints taken at each agent turn: [checkpoints].
	Checkpoints Checkpoints `toml:"checkpoints"`
	// Auth says who may sign in over TCP besides the host's tokens: [auth.github].
	Auth Auth `toml:"auth"`
	// Alarms says what an alarm does beyond being recorded, shown and notified: [alarms].
	Alarms Alarms `toml:"alarms"`
	// Vagrant holds the vagrant backend's settings ([vagrant]; the backend checks them):
	// the same as [backends.vagrant], which Load fills from it.
	Vagrant map[string]any `toml:"vagrant"`
}

// Run is the config's [run] section: the model of `paddock run` and its default budget.
type Run struct {
	// Provider is the [providers.NAME] whose key and base URL the loop uses: anthropic
	// (the Messages API), openai or an OpenAI-compatible provider (the Responses API).
	// Empty means anthropic.
	Provider string `toml:"provider"`
	// Model is the model's name. Empty means DefaultRunModel.
	Model string `toml:"model"`
	// MaxTurns and MaxTokens bound each prompt unless `paddock run` says otherwise; zero
	// means MaxTurns 200 and no token bound.
	MaxTurns  int   `toml:"max_turns"`
	MaxTokens int64 `toml:"max_tokens"`
	// ContextTokens is the conversation size beyond which older tool output is left out
	// of what the model is sent. Zero means 150000.
	ContextTokens int64 `toml:"context_tokens"`
}

// DefaultRunModel is the model `paddock run` uses when [run] names none.
const DefaultRunModel = "claude-sonnet-4-5"

// Notify is the config's [notify] section: a webhook, and what Web Push subscribers and
// the webhook hear about. Browsers subscribe themselves from the web UI.
type Notify struct {
	// Webhook is a URL the daemon POSTs to, e.g. "https://ntfy.sh/my-topic".
	Webhook string `toml:"webhook"`
	// Format is the webhook body: "ntfy" (plain text with Title, Click and Tags
	// headers), "slack" ({"text": ...}, as Slack and Mattermost incoming webhooks take)
	// or "json" (the event itself). Empty means ntfy.
	Format string `toml:"format"`
	// Headers are sent with each webhook request; "${NAME}" in a value is the daemon's
	// environment variable NAME, read at each request (tokens stay out of the file).
	Headers map[string]string `toml:"headers"`
	// Events are what to notify: "waiting" (a session waits for the human), "finished"
	// (an agent ended its turn), "exited" (a session's process ended), "budget" (a
	// budget 80% spent, or spent), "alarm" (an agent went for its own controls), "task"
	// (a task's attempt passed its checks, every attempt is done, a landing conflicts, an
	// attempt landed). Empty means all.
	Events []string `toml:"events"`
	// URL is where the web UI is reached from the phone (behind a proxy, say), for the
	// link in each notification. Empty means the address paddock web serves.
	URL string `toml:"url"`
	// Contact is the VAPID subject push services may use to reach the sender: a
	// mailto: or https: URL. Empty means "mailto:paddock@localhost".
	Contact string `toml:"contact"`
}

// Alarms is [alarms]: what the daemon does when an agent goes for its own controls.
type Alarms struct {
	// Stop stops the sandbox of an agent that raised an alarm (every process in it, the
	// agent and whatever it left running); its sessions resume at the next start. False
	// (the default): the alarm is recorded, shown and notified, and the agent goes on.
	Stop bool `toml:"stop"`
}

// NotifyEvents are the values [notify] events may hold.
var NotifyEvents = []string{"waiting", "finished", "exited", "budget", "alarm", "task"}

// NotifyFormats are the values [notify] format may hold.
var NotifyFormats = []string{"ntfy", "slack", "json"}

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
	c := Config{Backup: DefaultBackup()}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read config: %w", err)
	}
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		if derr := describeDuration(path, data, err); derr != nil {
			return c, derr
		}
		return c, describe(path, err)
	}
	if err := c.renameFormer(path); err != nil {
		return c, err
	}
	if len(c.Vagrant) > 0 {
		if _, both := c.Backends["vagrant"]; both {
			return c, fmt.Errorf("config %s: [vagrant] and [backends.vagrant] say the same: keep one", path)
		}
		if c.Backends == nil {
			c.Backends = map[string]map[string]any{}
		}
		c.Backends["vagrant"] = c.Vagrant
	}
	if err := c.validate(path); err != nil {
		return c, err
	}
	return c, c.Backup.validate(path, data)
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
	if c.Run.MaxTurns < 0 || c.Run.MaxTokens < 0 || c.Run.ContextTokens < 0 {
		return fmt.Errorf("config %s: [run] max_turns, max_tokens and context_tokens cannot be negative", path)
	}
	if p := c.Run.Provider; p != "" {
		if p == "gemini" {
			return fmt.Errorf("config %s: [run] provider: paddock run speaks the Anthropic and OpenAI APIs, not Gemini's: use anthropic, openai or an OpenAI-compatible provider", path)
		}
		if _, ok := c.Providers[p]; !ok && p != "anthropic" && p != "openai" {
			return fmt.Errorf("config %s: [run] provider %q is not declared: add [providers.%s] with its base_url, or leave provider out for anthropic", path, p, p)
		}
	}
	if c.Budget.USD < 0 || c.Budget.Tokens < 0 {
		return fmt.Errorf("config %s: [budget] usd and tokens cannot be negative", path)
	}
	if err := cost.CheckPrices(c.Prices); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if c.GuestBinary != "" && !strings.HasPrefix(c.GuestBinary, "/") {
		return fmt.Errorf("config %s: guest_binary must be an absolute path, got %q", path, c.GuestBinary)
	}
	for name, opts := range c.Backends {
		if rootfs, ok := opts["rootfs"].(string); ok && rootfs != "" && hostroot.Is(rootfs) {
			return fmt.Errorf("config %s: [backends.%s] rootfs %q is the host's own root filesystem: a sandbox on it would see every file of the host; %s",
				path, name, rootfs, hostroot.Hint)
		}
	}
	if err := c.Auth.GitHub.validate(); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Notify.validate(); err != nil {
		return fmt.Errorf("config %s: [notify]: %w", path, err)
	}
	if err := c.Checkpoints.validate(); err != nil {
		return fmt.Errorf("config %s: [checkpoints]: %w", path, err)
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

func (n Notify) validate() error {
	if n.Webhook != "" {
		if u, err := url.Parse(n.Webhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("webhook %q must be an http(s):// URL", n.Webhook)
		}
	}
	if n.Format != "" && !slices.Contains(NotifyFormats, n.Format) {
		return fmt.Errorf("format must be one of %s, got %q", strings.Join(NotifyFormats, ", "), n.Format)
	}
	for _, e := range n.Events {
		if !slices.Contains(NotifyEvents, e) {
			return fmt.Errorf("events: %q is not one of %s", e, strings.Join(NotifyEvents, ", "))
		}
	}
	if n.URL != "" {
		if u, err := url.Parse(n.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url %q must be the web UI's http(s):// address", n.URL)
		}
	}
	if n.Contact != "" && !strings.HasPrefix(n.Contact, "mailto:") && !strings.HasPrefix(n.Contact, "https://") {
		return fmt.Errorf("contact %q must be a mailto: or https:// URL", n.Contact)
	}
	return nil
}

// Provider is one model provider's entry of the config file ([providers.NAME]).
type Provider struct {
	// BaseURL is the upstream base URL.
	BaseURL string `toml:"base_url"`
	// Key is the key itself (prefer KeyCommand or KeyEnv: config files get shared).
	Key string `toml:"key"`
	// KeyCommand is run with sh -c; its output, trimmed, is the key (a password manager).
	KeyCommand string `toml:"key_command"`
	// KeyEnv names the daemon's environment variable holding the key.
	KeyEnv string `toml:"key_env"`
	// TokenURL is where the provider's subscription login is refreshed ([providers.anthropic]
	// for Claude's, [providers.chatgpt] for Codex's); the agent CLI's own by default.
	TokenURL string `toml:"token_url"`
}
