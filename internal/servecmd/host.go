package servecmd

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend/sshhost"
	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/config"
)

// configDir is the config file's directory, where this machine's daemon keeps what it
// reads beside it (the ssh backend's hosts).
func configDir(p config.Paths) string { return filepath.Dir(p.Config) }

// loadHosts reads this machine's hosts file, and says where it is.
func loadHosts(f *cli.Factory) (string, sshhost.HostsFile, error) {
	dir, err := f.HostsDir()
	if err != nil {
		return "", sshhost.HostsFile{}, err
	}
	hf, err := sshhost.LoadHosts(dir)
	return dir, hf, err
}

func newCmdHost(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "host", Short: "Machines sandboxes run on over SSH (`paddock up PATH --host NAME`)"}
	cmd.AddCommand(newCmdHostAdd(f), newCmdHostLs(f), newCmdHostRm(f))
	return cmd
}

type hostAddOptions struct {
	identity, fingerprint, home string
}

func newCmdHostAdd(f *cli.Factory) *cobra.Command {
	opts := &hostAddOptions{}
	cmd := &cobra.Command{
		Use:   "add NAME ssh://USER@HOST[:PORT]",
		Short: "Add a Linux machine reached over SSH: its host key is pinned, and paddock copied there",
		Long: `Add a Linux machine sandboxes can run on, reached over SSH with your keys (--identity, else
~/.ssh/id_ed25519, id_ecdsa, id_rsa, and ssh-agent; the agent is never forwarded). paddock logs in
at once, pins the host key it offers (shown; --fingerprint to require one), copies itself to
~/.paddock/bin/paddock there when missing or another build, and says which backend runs the
sandboxes there (bubblewrap where it works, else docker).

  paddock host add build1 ssh://me@build1
  paddock up ~/src/myrepo --host build1`,
		Args: cli.ExactArgs(2, "NAME and ssh://USER@HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHostAdd(cmd.Context(), f, opts, args[0], args[1])
		},
	}
	cmd.Flags().StringVar(&opts.identity, "identity", "", "the private key to log in with (default: ~/.ssh/id_ed25519, id_ecdsa, id_rsa, and ssh-agent)")
	cmd.Flags().StringVar(&opts.fingerprint, "fingerprint", "", "the host key's SHA256 fingerprint (ssh-keygen -lf on the host): any other is refused")
	cmd.Flags().StringVar(&opts.home, "home", "", "paddock's directory on the host (default ~/.paddock; /var/lib/paddock-ssh for root)")
	return cmd
}

func runHostAdd(ctx context.Context, f *cli.Factory, opts *hostAddOptions, name, rawURL string) error {
	if err := sshhost.CheckName(name); err != nil {
		return cli.Usagef("%v", err)
	}
	user, addr, err := sshhost.ParseURL(rawURL)
	if err != nil {
		return cli.Usagef("%v", err)
	}
	if opts.home != "" && !filepath.IsAbs(opts.home) {
		return cli.Usagef("--home is an absolute path on the host, not %q", opts.home)
	}
	dir, hf, err := loadHosts(f)
	if err != nil {
		return err
	}
	if _, dup := hf.Hosts[name]; dup {
		return apperr.Conflict("remove it first with `paddock host rm "+name+"`", "a host named %q exists", name)
	}
	h := sshhost.Host{User: user, Addr: addr, Home: opts.home}
	if opts.identity != "" {
		if h.Identity, err = filepath.Abs(opts.identity); err != nil {
			return err
		}
	}
	self, err := f.Executable()
	if err != nil {
		return err
	}
	var offered ssh.PublicKey
	pin := func(_ string, _ net.Addr, key ssh.PublicKey) error {
		offered = key
		if opts.fingerprint != "" && ssh.FingerprintSHA256(key) != opts.fingerprint {
			return fmt.Errorf("host %s offered the host key %s, not %s", name, ssh.FingerprintSHA256(key), opts.fingerprint)
		}
		fmt.Fprintf(f.IO.ErrOut, "paddock: %s (%s) offers the %s host key %s: pinned\n", name, addr, key.Type(), ssh.FingerprintSHA256(key))
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	link, err := sshhost.Open(ctx, name, h, sshhost.OpenOptions{Binary: self, HostKey: pin,
		Progress: func(s string) { fmt.Fprintf(f.IO.ErrOut, "paddock: %s\n", s) }})
	if err != nil {
		return apperr.Unavailable("", "%v", err)
	}
	link.Close()
	h.HostKey = string(ssh.MarshalAuthorizedKey(offered))
	hf.Hosts[name] = h
	if err := hf.Save(dir); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "paddock: added host %s: a Linux %s machine; its sandboxes run on %s there (paddock in %s)\nnext: paddock up PATH --host %s\n",
		name, link.Arch, link.Backend, link.Home, name)
	return nil
}

func newCmdHostLs(f *cli.Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the hosts: NAME URL HOST-KEY",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, hf, err := loadHosts(f)
			if err != nil {
				return err
			}
			type row struct {
				Name        string `json:"name"`
				URL         string `json:"url"`
				Fingerprint string `json:"host_key"`
				Identity    string `json:"identity,omitempty"`
				Home        string `json:"home,omitempty"`
			}
			rows := []row{}
			for _, name := range hf.Names() {
				h := hf.Hosts[name]
				fp := "?"
				if k, err := h.PublicKey(); err == nil {
					fp = ssh.FingerprintSHA256(k)
				}
				rows = append(rows, row{name, h.URL(), fp, h.Identity, h.Home})
			}
			if asJSON {
				return f.WriteJSON(rows)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tURL\tHOST-KEY")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.URL, r.Fingerprint)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newCmdHostRm(f *cli.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Forget a host and its pinned key (its sandboxes stay there, out of reach until it is added again)",
		Args:  cli.ExactArgs(1, "a host's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, hf, err := loadHosts(f)
			if err != nil {
				return err
			}
			if _, ok := hf.Hosts[args[0]]; !ok {
				return apperr.NotFound("see `paddock host ls`", "no host %q", args[0])
			}
			delete(hf.Hosts, args[0])
			if err := hf.Save(dir); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: removed host %s\n", args[0])
			return nil
		},
	}
}
