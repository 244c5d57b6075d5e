package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/termtext"
)

type loginOptions struct {
	caFile string
	name   string
}

func newCmdLogin(f *Factory) *cobra.Command {
	opts := &loginOptions{}
	cmd := &cobra.Command{
		Use:   "login [URL] [--context NAME]",
		Short: "Sign in with GitHub to a team's server, and keep its token for a context",
		Long: `Sign in with GitHub to a server whose [auth.github] lets the members of an organization in:
paddock shows a code to enter on GitHub, waits until you have, and keeps the token the server
then makes for you in a file of its own, for the context. With a URL, the context is added
(or its address changed); without, the current context (or --context) signs in again.

  paddock login https://server:7777 --context work
  paddock --context work ls                    # your sandboxes on the server`,
		Args: maxArgs(1, "at most a URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogin(cmd.Context(), f, opts, args)
		},
	}
	cmd.Flags().StringVar(&opts.caFile, "ca-file", "", "a PEM file of the CA that signed the server's certificate, besides the system's")
	cmd.Flags().StringVar(&opts.name, "name", "", "what the token is for, shown in the server's token list (default: this machine's host name)")
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
	c, err := api.NewRemoteClient(rc.URL, "", ca)
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
		res, err := c.PollDeviceLogin(ctx, api.DeviceTokenRequest{Handle: start.Handle, Name: label})
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
