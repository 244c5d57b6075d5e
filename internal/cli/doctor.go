package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/config"
)

type doctorOptions struct {
	json    bool
	verbose bool
}

func newCmdDoctor(f *Factory) *cobra.Command {
	opts := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Say which backends and agents work here, and what to run for those that don't",
		Long: `One line per backend and per agent: ok, or what is missing and what to run. An agent's
line says where the daemon gets its API key (an environment variable, 'paddock key set', a
subscription login), never the key. -v adds the detail: resource limits, runtimes, what
paddock's own tests run of each agent, subscription logins.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDoctor(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	cmd.Flags().BoolVarP(&opts.verbose, "verbose", "v", false, "say everything: findings, runtimes, tests, logins")
	return cmd
}

// doctorReport is what the doctor says, gathered from the daemon and the config file.
type doctorReport struct {
	wire.Doctor
	// Providers are the credential proxy's providers and where their keys come from.
	Providers []wire.ProviderInfo `json:"providers"`
	// Config lists config files whose API keys others may read.
	Config []config.KeyWarning `json:"config"`
	// ConfigPath is the config file the daemon reads; ConfigFound is false when there is
	// none (the defaults apply).
	ConfigPath  string `json:"config_path"`
	ConfigFound bool   `json:"config_found"`
}

func runDoctor(ctx context.Context, f *Factory, opts *doctorOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	doc, err := c.Doctor(ctx)
	if err != nil {
		return err
	}
	providers, err := c.Providers(ctx)
	if err != nil {
		return err
	}
	p, err := f.Paths()
	if err != nil {
		return err
	}
	// The daemon reads the same config file: it runs as this user, on these paths.
	keys, err := config.CheckKeys(p.Config)
	if err != nil {
		return err
	}
	r := doctorReport{Doctor: doc, Providers: providers, Config: []config.KeyWarning{}, ConfigPath: p.Config}
	if keys != nil {
		r.Config = append(r.Config, *keys)
	}
	if _, err := os.Stat(p.Config); err == nil {
		r.ConfigFound = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if opts.json {
		return writeJSON(f, r)
	}
	writeDoctor(f.IO.Out, r, opts.verbose)
	for _, b := range doc.Backends {
		if b.Available {
			return nil
		}
	}
	return &exitError{5}
}

// writeDoctor writes the report for people: one line per backend, agent and config
// file, and with verbose everything else.
func writeDoctor(w io.Writer, r doctorReport, verbose bool) {
	fmt.Fprintln(w, "backends:")
	for _, b := range r.Backends {
		writeBackend(w, b, verbose)
	}
	fmt.Fprintln(w, "agents (in a sandbox that sees the host's /usr):")
	for _, a := range r.Agents {
		if !a.Available {
			fmt.Fprintf(w, "missing  %s: install it: %s\n", a.Name, a.Install)
		} else if key, ok := agentKey(a.Name, r.Providers); !ok {
			fmt.Fprintf(w, "warning  %s: %s\n", a.Name, key)
		} else {
			fmt.Fprintf(w, "ok       %s%s\n", a.Name, key)
		}
		if verbose {
			if a.Path != "" {
				fmt.Fprintf(w, "         at %s\n", a.Path)
			}
			// What paddock's own tests run of it: for real end to end, or not at all, and why.
			fmt.Fprintf(w, "         tested by paddock: %s\n", a.Tested)
		}
	}
	// The logins held (all of them with verbose): whether each still works.
	header := false
	for _, l := range r.Logins {
		if !l.Present && !verbose {
			continue
		}
		if !header {
			fmt.Fprintln(w, "subscription logins (paddock login NAME):")
			header = true
		}
		switch {
		case !l.Present:
			fmt.Fprintf(w, "none     %s\n", l.Name)
		case l.Problem != "":
			fmt.Fprintf(w, "warning  %s: %s (seen %s)\n", l.Name, l.Problem, l.ProblemAt.Local().Format(time.DateTime))
			fmt.Fprintf(w, "         fix: sign in again with the %s CLI on this host, then run `paddock login %s` (a login the provider refuses was revoked, signed out, or its refresh token spent elsewhere)\n", l.Name, l.Name)
		default:
			fmt.Fprintf(w, "ok       %s (%s)%s\n", l.Name, l.Source, loginExpiryWords(l))
		}
	}
	fmt.Fprintln(w, "config:")
	switch {
	case len(r.Config) > 0:
		k := r.Config[0]
		fmt.Fprintf(w, "warning  %s holds an API key (%s) and %s\n", k.Path, strings.Join(k.Keys, ", "), k.Problem)
		fmt.Fprintf(w, "         fix: %s\n", k.Fix)
	case !r.ConfigFound:
		fmt.Fprintf(w, "ok       %s: not found (the defaults apply)\n", r.ConfigPath)
	default:
		fmt.Fprintf(w, "ok       %s: no API key others may read\n", r.ConfigPath)
	}
}

// writeBackend writes a backend's line: ok, or why not and the fix; the count of its
// warnings, whose text (with every finding and runtime) verbose writes below it.
func writeBackend(w io.Writer, b wire.BackendReport, verbose bool) {
	if !b.Available {
		line := fmt.Sprintf("missing  %s: %s", b.Name, b.Reason)
		if b.Fix != "" {
			line += "; fix: " + b.Fix
		}
		fmt.Fprintln(w, line)
		return
	}
	def := ""
	if b.Default {
		def = " (default)"
	}
	warnings := 0
	for _, fd := range b.Findings {
		if !fd.OK {
			warnings++
		}
	}
	switch {
	case warnings == 0 || verbose:
		fmt.Fprintf(w, "ok       %s%s\n", b.Name, def)
	case warnings == 1:
		fmt.Fprintf(w, "ok       %s%s, 1 warning (paddock doctor -v)\n", b.Name, def)
	default:
		fmt.Fprintf(w, "ok       %s%s, %d warnings (paddock doctor -v)\n", b.Name, def, warnings)
	}
	if !verbose {
		return
	}
	for _, rt := range b.Runtimes {
		state := "missing"
		if rt.Available {
			state = "ok"
		}
		fmt.Fprintf(w, "         runtime %s: %s: %s\n", rt.Name, state, rt.Detail)
		if rt.Fix != "" {
			fmt.Fprintf(w, "         fix: %s\n", rt.Fix)
		}
	}
	for _, fd := range b.Findings {
		state := "ok"
		if !fd.OK {
			state = "warning"
		}
		fmt.Fprintf(w, "         %s: %s: %s\n", fd.Topic, state, fd.Text)
		if fd.Fix != "" {
			fmt.Fprintf(w, "         fix: %s\n", fd.Fix)
		}
	}
}

// agentKey says where the daemon gets the API key of the provider agent calls, as the
// rest of the agent's line (", key: ANTHROPIC_API_KEY in the daemon's environment"), or,
// with ok false, that it has none and what to run. An agent with no provider of its
// own (a shell, an agent pointed at a provider by its config) says nothing.
func agentKey(agent string, providers []wire.ProviderInfo) (string, bool) {
	a, err := agents.Get(agent)
	if err != nil || a.Provider == "" {
		return "", true
	}
	for _, p := range providers {
		if p.Name != a.Provider {
			continue
		}
		switch p.Key {
		case "env":
			return fmt.Sprintf(", key: %s in the daemon's environment", p.KeyEnv), true
		case "file":
			return fmt.Sprintf(", key: set with paddock key set %s", p.Name), true
		case "config":
			return ", key: in the config file", true
		case "command":
			return ", key: the config's key_command", true
		case "login":
			return fmt.Sprintf(", key: the subscription login (paddock login %s)", p.Login), true
		}
		fix := "run paddock key set " + p.Name
		if a.Login != "" {
			fix += ", or paddock login " + a.Login
		}
		return fmt.Sprintf("no %s API key: %s", p.Name, fix), false
	}
	return "", true
}
