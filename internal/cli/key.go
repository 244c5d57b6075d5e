package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/config"
)

func newCmdKey(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "The model providers' API keys the daemon holds: set, list, remove",
		Long: `The daemon holds the model providers' API keys; sandboxes get a placeholder, and the
credential proxy puts the real key on the provider's requests. A key comes from the config's
[providers.NAME] key_command, the daemon's environment (ANTHROPIC_API_KEY, OPENAI_API_KEY,
GEMINI_API_KEY), or a key file that ` + "`paddock key set`" + ` writes beside the config (mode 0600,
never seen by a sandbox), in that order. A key set here takes effect at once.

  paddock key set anthropic              asks for the key, not echoed
  pass show anthropic | paddock key set anthropic
  paddock key ls
  paddock key rm anthropic`,
	}
	cmd.AddCommand(newCmdKeySet(f), newCmdKeyLs(f), newCmdKeyRm(f))
	return cmd
}

func newCmdKeySet(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "set PROVIDER",
		Short: "Give the daemon a provider's key: asked for on a terminal, else read from stdin",
		Args:  exactArgs(1, "one provider (anthropic, openai, gemini, or one of the config's)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			var key string
			if isTerminal(f.IO.In) {
				if key, err = askSecret(f, fmt.Sprintf("%s API key (not shown): ", args[0])); err != nil {
					return err
				}
			} else {
				data, err := io.ReadAll(io.LimitReader(f.IO.In, 64<<10))
				if err != nil {
					return err
				}
				key = strings.TrimSpace(string(data))
			}
			if key == "" {
				return usagef("no key given: type it at the prompt, or pipe it in (`pass show %s | paddock key set %s`)", args[0], args[0])
			}
			info, err := c.SetKey(cmd.Context(), args[0], key)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: the daemon holds a key for %s, from its %s\n", info.Name, keySourceWords(info.Key))
			return nil
		},
	}
}

func newCmdKeyLs(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the providers and where each key comes from (never the keys)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			list, err := c.Providers(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f, list)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PROVIDER\tKEY")
			for _, p := range list {
				fmt.Fprintf(tw, "%s\t%s\n", p.Name, keySourceWords(p.Key))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newCmdKeyRm(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "rm PROVIDER",
		Short: "Remove the key `paddock key set` kept (keys from the environment or config stay)",
		Args:  exactArgs(1, "one provider"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			info, err := c.SetKey(cmd.Context(), args[0], "")
			if err != nil {
				return err
			}
			if info.Key != "" {
				fmt.Fprintf(f.IO.ErrOut, "paddock: removed the key file of %s; the daemon still has a key for it, from its %s\n", info.Name, keySourceWords(info.Key))
				return nil
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: %s has no key now\n", info.Name)
			return nil
		},
	}
}

// keySourceWords says where a key comes from, for people.
func keySourceWords(source string) string {
	switch source {
	case "config":
		return "config file"
	case "command":
		return "config's key_command"
	case "env":
		return "environment"
	case "file":
		return "key file"
	case "login":
		return "subscription login (paddock login)"
	}
	return "none"
}

// ensureKey makes sure the daemon holds a key for the provider agent calls, before a
// session of it starts: on a terminal it asks for one (not echoed) and gives it to the
// daemon; with --non-interactive or no terminal it fails at once (exit 2) with the
// command that sets one. An agent with no single provider, or a daemon that does not
// say, passes.
func ensureKey(ctx context.Context, f *Factory, c *client.Client, agent string) error {
	a, err := agents.Get(agent)
	if err != nil || a.Provider == "" {
		return nil
	}
	list, err := c.Providers(ctx)
	if err != nil {
		return nil // an older daemon: the session's own check says it
	}
	orLogin := ""
	if a.Login != "" {
		if logins, err := c.Logins(ctx); err == nil {
			for _, l := range logins {
				if l.Name == a.Login && l.Present {
					return nil // the subscription login stands for the key
				}
			}
		}
		orLogin = fmt.Sprintf(", or `paddock login %s` to use your subscription", a.Login)
	}
	for _, p := range list {
		if p.Name != a.Provider || p.Key != "" {
			continue
		}
		if f.remote != "" {
			return usagef("agent %s calls %s, and the daemon of context %s has no key for it: on its host, run `paddock key set %s`%s",
				agent, a.Provider, f.remote, a.Provider, orLogin)
		}
		if f.NonInteractive || !isTerminal(f.IO.In) || !isTerminal(f.IO.ErrOut) {
			return usagef("agent %s calls %s, and the daemon has no key for it: run `paddock key set %s` (or start the daemon with %s_API_KEY in its environment)%s",
				agent, a.Provider, a.Provider, strings.ToUpper(a.Provider), orLogin)
		}
		fmt.Fprintf(f.IO.ErrOut, "agent %s calls %s, and the daemon has no key for it.\n", agent, a.Provider)
		fmt.Fprintf(f.IO.ErrOut, "The daemon keeps it beside its config, where no sandbox sees it; sandboxes get a placeholder.\n")
		key, err := askSecret(f, fmt.Sprintf("%s API key (not shown; empty to stop): ", a.Provider))
		if err != nil {
			return err
		}
		if key == "" {
			return usagef("no key given: run `paddock key set %s` when you have one", a.Provider)
		}
		if _, err := c.SetKey(ctx, a.Provider, key); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: the daemon holds a key for %s now (`paddock key rm %s` removes it)\n", a.Provider, a.Provider)
	}
	return nil
}

// askSecret reads one line from the terminal without echoing it. Echo goes off before
// the prompt shows, so nothing typed at the prompt is ever shown.
func askSecret(f *Factory, prompt string) (string, error) {
	file, ok := f.IO.In.(*os.File)
	if !ok || !term.IsTerminal(int(file.Fd())) {
		fmt.Fprint(f.IO.ErrOut, prompt)
		line, err := bufio.NewReader(f.IO.In).ReadString('\n')
		if err != nil && line == "" {
			return "", err
		}
		return strings.TrimSpace(line), nil
	}
	fd := int(file.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	quiet.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return "", err
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)
	fmt.Fprint(f.IO.ErrOut, prompt)
	defer fmt.Fprintln(f.IO.ErrOut)
	line, err := bufio.NewReader(file).ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// chooseAgent picks the agent of a new session in sandbox sb when none was named: the
// sandbox's own agent when it was made for one, a choice among them when for several
// (asked on a terminal), else the default agent.
func chooseAgent(ctx context.Context, f *Factory, c *client.Client, sb, session string) (string, error) {
	info, err := c.Get(ctx, sb)
	if err != nil {
		return "", err
	}
	switch len(info.Agents) {
	case 0:
		return wire.DefaultAgent, nil
	case 1:
		return info.Agents[0], nil
	}
	return f.choose(fmt.Sprintf("session %s of sandbox %s could run any of its agents: which one?", session, sb), info.Agents,
		func(agent string) string {
			return fmt.Sprintf("paddock chat %s --new %s --agent %s", sb, session, agent)
		})
}

// chooseBackend fills in the backend of `up` when none was named. With the daemon on
// this host, the config's default_backend is sent (the running daemon may predate the
// setting); when the config names none and several backends are available, a terminal
// is asked which one should be the default, and the answer is saved in the config. With
// --non-interactive or no terminal, the daemon's own choice stands (the first available
// of bwrap, docker).
func chooseBackend(ctx context.Context, f *Factory, c *client.Client, opts *upOptions) error {
	if opts.backend != "" || f.remote != "" || opts.devcontainer != "" || opts.image != "" || opts.runtime != "" ||
		opts.kubeContext != "" || opts.namespace != "" || opts.host != "" {
		return nil
	}
	p, err := f.Paths()
	if err != nil {
		return nil
	}
	cfg, err := config.Load(p.Config)
	if err != nil {
		return nil // the daemon says what is wrong with it
	}
	if cfg.DefaultBackend != "" {
		opts.backend = cfg.DefaultBackend
		return nil
	}
	if f.NonInteractive || !isTerminal(f.IO.In) || !isTerminal(f.IO.ErrOut) {
		return nil
	}
	doc, err := c.Doctor(ctx)
	if err != nil {
		return nil
	}
	var names []string
	for _, b := range doc.Backends {
		if b.Available && b.Default {
			names = append([]string{b.Name}, names...)
		} else if b.Available {
			names = append(names, b.Name)
		}
	}
	if len(names) < 2 {
		return nil
	}
	choice, err := f.choose("no default backend is set, and several run here: which one should `paddock up` use?", names,
		func(name string) string { return "paddock config set default_backend " + name })
	if err != nil {
		return err
	}
	if _, err := config.Edit(p.Config, "default_backend", choice); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: saved default_backend = %q in %s (`paddock config set default_backend NAME` changes it; --backend overrides it)\n", choice, p.Config)
	opts.backend = choice
	return nil
}
