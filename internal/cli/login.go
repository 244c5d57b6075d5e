package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/termtext"
)

type loginOptions struct {
	caFile string
	name   string
	// A provider's subscription login (paddock login claude|codex).
	tokenFile, file  string
	fromHost, remove bool
}

func newCmdLogin(f *Factory) *cobra.Command {
	opts := &loginOptions{}
	cmd := &cobra.Command{
		Use:   "login [URL | claude | codex]",
		Short: "Sign in to a team's server with GitHub; or give the daemon your Claude or ChatGPT subscription login",
		Long: `Two kinds of login.

paddock login claude | codex: give the daemon the subscription login an agent uses instead of
an API key. The daemon keeps it beside its config (mode 0600) and never lets it into a sandbox:
the agent there holds a placeholder of the same shape, and the credential proxy puts the real
token on the provider's API requests only, refreshing it on this host when it expires.

  paddock login claude                         asks for a token of ` + "`claude setup-token`" + ` (not shown)
  claude setup-token | tail -1 | paddock login claude --token-file -
  paddock login claude --from-host             this host's Claude Code login (~/.claude/.credentials.json)
  paddock login codex                          this host's Codex ChatGPT login ($CODEX_HOME/auth.json)
  paddock login codex --remove                 forget it (the provider's API key is used again)

paddock login URL --context NAME: sign in with GitHub to a server whose [auth.github] lets the
members of an organization in: paddock shows a code to enter on GitHub, waits until you have,
and keeps the token the server then makes for you in a file of its own, for the context. With
a URL, the context is added (or its address changed); without, the current context (or
--context) signs in again.

  paddock login https://server:7777 --context work
  paddock --context work ls                    # your sandboxes on the server`,
		Args: maxArgs(1, "at most a URL, or claude or codex"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && wire.KnownLogin(args[0]) {
				return runAgentLogin(cmd.Context(), f, opts, args[0])
			}
			if opts.tokenFile != "" || opts.file != "" || opts.fromHost || opts.remove {
				return usagef("--token-file, --file, --from-host and --remove are for `paddock login claude` and `paddock login codex`")
			}
			return runLogin(cmd.Context(), f, opts, args)
		},
	}
	cmd.Flags().StringVar(&opts.caFile, "ca-file", "", "a PEM file of the CA that signed the server's certificate, besides the system's")
	cmd.Flags().StringVar(&opts.name, "name", "", "what the token is for, shown in the server's token list (default: this machine's host name)")
	cmd.Flags().StringVar(&opts.tokenFile, "token-file", "", "claude: read the token 'claude setup-token' printed from this `FILE` (- for stdin)")
	cmd.Flags().StringVar(&opts.file, "file", "", "the agent's own credentials file (Claude Code's .credentials.json, Codex's auth.json)")
	cmd.Flags().BoolVar(&opts.fromHost, "from-host", false, "claude: use this host's Claude Code login (~/.claude/.credentials.json)")
	cmd.Flags().BoolVar(&opts.remove, "remove", false, "forget the claude or codex login the daemon holds")
	return cmd
}

func runLogin(ctx context.Context, f *Factory, opts *loginOptions, args []string) error {
	p, cf, err := f.contexts()
	if err != nil {
		return err
	}
	name := f.contextName(cf)
	rc, exists := cf.Contexts[name]
	switch {
	case len(args) == 1 && f.Context == "":
		return usagef("name the context to sign in for: paddock login %s --context NAME", args[0])
	case len(args) == 1:
		if !contextNameRE.MatchString(name) || name == LocalContext {
			return usagef("a context's name is lower-case letters, digits, '.', '_' and '-', and not %q", LocalContext)
		}
		rc.URL = args[0]
	case name == LocalContext:
		return usagef("this machine's daemon needs no sign-in; give a server: paddock login https://HOST:PORT --context NAME")
	case !exists:
		return apperr.NotFound("add it with `paddock login https://HOST:PORT --context "+name+"`", "no context %q", name)
	}
	if opts.caFile != "" {
		if rc.CAFile, err = filepath.Abs(opts.caFile); err != nil {
			return err
		}
	}
	if rc.TokenFile == "" {
		rc.TokenFile = filepath.Join(filepath.Dir(contextsPath(p)), "tokens", name)
	}
	var ca []byte
	if rc.CAFile != "" {
		if ca, err = os.ReadFile(rc.CAFile); err != nil {
			return fmt.Errorf("the context's CA: %w", err)
		}
	}
	c, err := client.NewRemoteClient(rc.URL, "", ca)
	if err != nil {
		return apperr.Invalid("", "%v", err)
	}
	start, err := c.StartDeviceLogin(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: enter the code %s at %s to sign in to %s with GitHub (within %d minutes)\n",
		termtext.Escape(start.UserCode), termtext.Escape(start.VerificationURI), rc.URL, max(start.ExpiresIn/60, 1))
	label := opts.name
	if label == "" {
		label, _ = os.Hostname()
	}
	interval := time.Duration(max(start.Interval, 1)) * time.Second
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
		res, err := c.PollDeviceLogin(ctx, wire.DeviceTokenRequest{Handle: start.Handle, Name: label})
		if err != nil {
			return err
		}
		switch res.Status {
		case "pending":
		case "slow_down":
			interval = time.Duration(max(res.Interval, 1)) * time.Second
		case "done":
			if err := os.MkdirAll(filepath.Dir(rc.TokenFile), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(rc.TokenFile, []byte(res.Token+"\n"), 0o600); err != nil {
				return err
			}
			cf.Contexts[name] = rc
			if err := saveContexts(p, cf); err != nil {
				return err
			}
			role := ""
			if res.Admin {
				role = " (an admin)"
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: signed in to %s as %s%s; token %s kept in %s for context %s\n",
				rc.URL, termtext.Escape(res.Login), role, termtext.Escape(res.Name), rc.TokenFile, name)
			return nil
		default:
			return fmt.Errorf("the server answered %q to the sign-in", res.Status)
		}
	}
}
