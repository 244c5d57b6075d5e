package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api"
	"github.com/paddockhq/paddock/internal/config"
)

type doctorOptions struct {
	json bool
}

func newCmdDoctor(f *Factory, runF func(context.Context, *doctorOptions) error) *cobra.Command {
	opts := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Say which backends work here, and how to fix those that don't",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDoctor(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
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
	p, err := f.Paths()
	if err != nil {
		return err
	}
	// The daemon reads the same config file: it runs as this user, on these paths.
	keys, err := config.CheckKeys(p.Config)
	if err != nil {
		return err
	}
	if opts.json {
		out := struct {
			api.Doctor
			// Config lists config files whose API keys others may read.
			Config []config.KeyWarning `json:"config"`
		}{Doctor: doc, Config: []config.KeyWarning{}}
		if keys != nil {
			out.Config = append(out.Config, *keys)
		}
		return writeJSON(f, out)
	}
	anyOK := false
	fmt.Fprintln(f.IO.Out, "backends:")
	for _, r := range doc.Backends {
		if r.Available {
			anyOK = true
			def := ""
			if r.Default {
				def = " (default)"
			}
			fmt.Fprintf(f.IO.Out, "ok       %s%s\n", r.Name, def)
			for _, rt := range r.Runtimes {
				state := "missing"
				if rt.Available {
					state = "ok"
				}
				fmt.Fprintf(f.IO.Out, "         runtime %s: %s: %s\n", rt.Name, state, rt.Detail)
				if rt.Fix != "" {
					fmt.Fprintf(f.IO.Out, "         fix: %s\n", rt.Fix)
				}
			}
			for _, fd := range r.Findings {
				state := "ok"
				if !fd.OK {
					state = "warning"
				}
				fmt.Fprintf(f.IO.Out, "         %s: %s: %s\n", fd.Topic, state, fd.Text)
				if fd.Fix != "" {
					fmt.Fprintf(f.IO.Out, "         fix: %s\n", fd.Fix)
				}
			}
			continue
		}
		fmt.Fprintf(f.IO.Out, "missing  %s: %s\n", r.Name, r.Reason)
		if r.Fix != "" {
			fmt.Fprintf(f.IO.Out, "         fix: %s\n", r.Fix)
		}
	}
	fmt.Fprintln(f.IO.Out, "agents (in a sandbox that sees the host's /usr):")
	for _, a := range doc.Agents {
		if a.Available {
			fmt.Fprintf(f.IO.Out, "ok       %s (%s)\n", a.Name, a.Path)
		} else {
			fmt.Fprintf(f.IO.Out, "missing  %s: install it: %s\n", a.Name, a.Install)
		}
		// What paddock's own tests run of it: for real end to end, or not at all, and why.
		fmt.Fprintf(f.IO.Out, "         tested by paddock: %s\n", a.Tested)
	}
	fmt.Fprintln(f.IO.Out, "subscription logins (paddock login NAME):")
	for _, l := range doc.Logins {
		switch {
		case !l.Present:
			fmt.Fprintf(f.IO.Out, "none     %s\n", l.Name)
		case l.Problem != "":
			fmt.Fprintf(f.IO.Out, "warning  %s: %s (seen %s)\n", l.Name, l.Problem, l.ProblemAt.Local().Format(time.DateTime))
			fmt.Fprintf(f.IO.Out, "         fix: sign in again with the %s CLI on this host, then run `paddock login %s` (a login the provider refuses was revoked, signed out, or its refresh token spent elsewhere)\n", l.Name, l.Name)
		default:
			fmt.Fprintf(f.IO.Out, "ok       %s (%s)%s\n", l.Name, l.Source, loginExpiryWords(l))
		}
	}
	fmt.Fprintln(f.IO.Out, "config:")
	if keys == nil {
		fmt.Fprintf(f.IO.Out, "ok       %s: no API key others may read\n", p.Config)
	} else {
		fmt.Fprintf(f.IO.Out, "warning  %s holds an API key (%s) and %s\n", keys.Path, strings.Join(keys.Keys, ", "), keys.Problem)
		fmt.Fprintf(f.IO.Out, "         fix: %s\n", keys.Fix)
	}
	if !anyOK {
		return &exitError{5}
	}
	return nil
}
