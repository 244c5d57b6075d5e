package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

type webOptions struct {
	listen  string
	tlsCert string
	tlsKey  string
	stop    bool
	json    bool
}

func newCmdWeb(f *Factory) *cobra.Command {
	opts := &webOptions{}
	cmd := &cobra.Command{
		Use:   "web [--listen HOST:PORT] [--tls-cert FILE --tls-key FILE] | --stop",
		Short: "Serve the API over TCP, behind tokens, for browsers and phones",
		Long: `Ask the daemon to serve its API on a TCP address as well as its unix socket, and print a
login URL that signs one browser in (once, within 10 minutes). The daemon keeps serving after
this command ends, and again after it restarts, until ` + "`paddock web --stop`" + `, which also
signs every browser out. Run again with no flags to see where it serves and get a new login URL.

Every request on TCP needs a token (` + "`paddock token create`" + `, sent as "Authorization:
Bearer TOKEN") or a signed-in browser. Tokens and the listener itself are managed only here, on
the daemon's host.

  paddock web                                     127.0.0.1:7777, this machine only
  paddock web --listen 0.0.0.0:7777 --tls-cert cert.pem --tls-key key.pem
                                                  HTTPS, reachable from the network
  paddock web --stop`,
		Args: exactArgs(0, "no arguments (use --listen HOST:PORT)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.stop && (cmd.Flags().Changed("listen") || opts.tlsCert != "" || opts.tlsKey != "") {
				return usagef("--stop takes no other flags")
			}
			if (opts.tlsCert == "") != (opts.tlsKey == "") {
				return usagef("give both --tls-cert and --tls-key, or neither")
			}
			for _, p := range []*string{&opts.tlsCert, &opts.tlsKey} {
				if *p != "" {
					abs, err := filepath.Abs(*p)
					if err != nil {
						return err
					}
					*p = abs // the daemon has its own working directory
				}
			}
			return runWeb(cmd.Context(), f, opts, cmd.Flags().Changed("listen") || opts.tlsCert != "")
		},
	}
	cmd.Flags().StringVar(&opts.listen, "listen", "127.0.0.1:7777", "the TCP address to serve on (port 0: any free port)")
	cmd.Flags().StringVar(&opts.tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate (chain)")
	cmd.Flags().StringVar(&opts.tlsKey, "tls-key", "", "the PEM private key of --tls-cert")
	cmd.Flags().BoolVar(&opts.stop, "stop", false, "stop serving over TCP and sign every browser out")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

// runWeb serves (or, with no flags and a listener already up, shows) the TCP listener.
func runWeb(ctx context.Context, f *Factory, opts *webOptions, flags bool) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if opts.stop {
		st, err := c.StopWeb(ctx)
		if err != nil {
			return err
		}
		if opts.json {
			return writeJSON(f, st)
		}
		if !st.Serving {
			fmt.Fprintln(f.IO.ErrOut, "paddock: the API was not served over TCP")
			return nil
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: stopped serving the API on %s; every browser is signed out (tokens stay until `paddock token revoke`)\n", st.URL)
		return nil
	}
	var st wire.WebStatus
	if !flags {
		cur, err := c.Web(ctx)
		if err != nil {
			return err
		}
		switch {
		case cur.Serving:
			st, err = c.WebLogin(ctx)
		case cur.Error != "":
			return apperr.Unavailable("run `paddock web` with the flags you want again, or `paddock web --stop` to forget it", "%s", cur.Error)
		default:
			st, err = c.ServeWeb(ctx, wire.WebRequest{Listen: opts.listen})
		}
		if err != nil {
			return err
		}
	} else {
		st, err = c.ServeWeb(ctx, wire.WebRequest{Listen: opts.listen, TLSCert: opts.tlsCert, TLSKey: opts.tlsKey})
		if err != nil {
			return err
		}
	}
	if !st.Loopback && !st.TLS {
		fmt.Fprintf(f.IO.ErrOut, `paddock: WARNING: the API is served to the network at %s WITHOUT TLS.
  Anyone who can see this network's traffic (the same Wi-Fi, any router on the way) can read the
  tokens and session cookies you send and everything the API answers (files, terminal output), and
  with them run commands in your sandboxes, type into their agents, change their network rules,
  and stop or delete them. Serve it with --tls-cert and --tls-key, or keep it on 127.0.0.1 and
  reach it through an encrypted tunnel (ssh -L 7777:127.0.0.1:7777 HOST, WireGuard, Tailscale).
`, st.URL)
	}
	if opts.json {
		return writeJSON(f, st)
	}
	fmt.Fprintf(f.IO.Out, "Serving the API on %s until `paddock web --stop`.\n", st.URL)
	fmt.Fprintf(f.IO.Out, "Sign a browser in with this URL (it works once, within 10 minutes):\n\n  %s\n\n", st.LoginURL)
	fmt.Fprintln(f.IO.Out, "Other clients: `paddock token create --name NAME`, then send \"Authorization: Bearer TOKEN\".")
	return nil
}
