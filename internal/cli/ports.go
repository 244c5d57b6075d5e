package cli

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/termtext"
)

func newCmdPorts(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ports [SANDBOX]",
		Short: "List the TCP ports listening inside a sandbox, with their preview URLs",
		Long: `Lists the TCP ports processes inside the sandbox listen on, and, while paddock web serves, where a
browser previews each: http://PORT-SANDBOX.localhost:WEBPORT/ on this machine (every browser resolves
*.localhost to the loopback), or /preview/SANDBOX/PORT/ under the web UI's address from anywhere.
Open one with paddock open SANDBOX:PORT.`,
		Args: maxArgs(1, "at most one sandbox"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			if name, err = resolveSandbox(cmd.Context(), f, c, name); err != nil {
				return err
			}
			ports, err := c.Ports(cmd.Context(), name)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f, ports)
			}
			if len(ports) == 0 {
				fmt.Fprintf(f.IO.ErrOut, "nothing listens in %s\n", name)
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PORT\tADDRESS\tPROCESS\tPREVIEW")
			web := false
			for _, p := range ports {
				preview := p.URL
				if preview == "" {
					preview = p.PathURL
				}
				if preview == "" {
					preview = "-"
				} else {
					web = true
				}
				// The process name is the sandbox's to choose (prctl): shown, never obeyed.
				proc := termtext.Escape(p.Process)
				if p.PID != "" {
					proc += " (" + termtext.Escape(p.PID) + ")"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", p.Port, termtext.Escape(p.Address), proc, preview)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if !web {
				fmt.Fprintln(f.IO.ErrOut, "previews need paddock web: run it, then paddock open "+name+":PORT")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newCmdOpen(f *Factory) *cobra.Command {
	var pathForm, print bool
	var path string
	cmd := &cobra.Command{
		Use:   "open SANDBOX:PORT",
		Short: "Open the preview of a port inside a sandbox in the browser",
		Long: `Opens http://PORT-SANDBOX.localhost:WEBPORT/ (served by paddock web, through the sandbox's tunnel)
with a one-time code that signs this browser in to that preview alone; the link works once, for two
minutes. --print prints the link instead. --path-form uses /preview/SANDBOX/PORT/ under the web UI's
address, behind the UI's own sign-in.`,
		Args: exactArgs(1, "SANDBOX:PORT (e.g. myrepo:3000)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, portStr, ok := strings.Cut(args[0], ":")
			port, err := strconv.Atoi(portStr)
			if !ok || err != nil || port < 1 || port > 65535 {
				return usagef("%q: give SANDBOX:PORT, e.g. myrepo:3000", args[0])
			}
			if path != "" && !strings.HasPrefix(path, "/") {
				return usagef("--path %q must start with /", path)
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			if name, err = resolveSandbox(cmd.Context(), f, c, name); err != nil {
				return err
			}
			link, err := c.OpenPort(cmd.Context(), name, port, pathForm)
			if err != nil {
				return err
			}
			u := link.URL
			if path != "" {
				base, query, _ := strings.Cut(u, "?")
				u = strings.TrimSuffix(base, "/") + path
				if query != "" {
					u += "?" + query
				}
			}
			if print {
				fmt.Fprintln(f.IO.Out, u)
				return nil
			}
			opener, err := exec.LookPath("xdg-open")
			if err != nil {
				fmt.Fprintln(f.IO.Out, u)
				fmt.Fprintln(f.IO.ErrOut, "paddock: no browser to open here (xdg-open is missing): open the link above, once, within two minutes")
				return nil
			}
			if err := exec.Command(opener, u).Start(); err != nil {
				return fmt.Errorf("open the browser: %w (the link: %s)", err, u)
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: opened %s:%d in the browser\n", name, port)
			return nil
		},
	}
	cmd.Flags().BoolVar(&print, "print", false, "print the link instead of opening it")
	cmd.Flags().BoolVar(&pathForm, "path-form", false, "the /preview/SANDBOX/PORT/ form under the web UI's address")
	cmd.Flags().StringVar(&path, "path", "", "open this path of the app, e.g. /admin")
	return cmd
}
