package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/front"
)

// LocalContext names the daemon of this machine, on its unix socket.
const LocalContext = front.LocalContext

// The contexts file and its contexts (package front reads them for the lean CLI too).
type (
	remoteContext = front.Context
	contextFile   = front.ContextFile
)

func contextsPath(p config.Paths) string { return front.ContextsPath(p) }

// contexts returns the paths and the contexts file.
func (f *Factory) contexts() (config.Paths, contextFile, error) {
	p, err := f.Paths()
	if err != nil {
		return p, contextFile{}, err
	}
	cf, err := loadContexts(p)
	return p, cf, err
}

func loadContexts(p config.Paths) (contextFile, error) { return front.LoadContexts(p) }

func saveContexts(p config.Paths, cf contextFile) error {
	data, err := json.MarshalIndent(cf, "", "  ")
	if err != nil {
		return err
	}
	path := contextsPath(p)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// contextName is the context a command talks to: --context, else PADDOCK_CONTEXT, else
// the one `context use` chose, else local.
func (f *Factory) contextName(cf contextFile) string { return front.ContextName(f.Context, cf) }

// remoteClient returns the client of a remote context and its name; nil for local.
func (f *Factory) remoteClient(p config.Paths) (*client.Client, string, error) {
	cf, err := loadContexts(p)
	if err != nil {
		return nil, "", err
	}
	name := f.contextName(cf)
	if name == LocalContext {
		return nil, name, nil
	}
	rc, ok := cf.Contexts[name]
	if !ok {
		return nil, name, apperr.NotFound("see `paddock context ls`, or add it with `paddock context add "+name+" https://HOST:PORT --token-file FILE`",
			"no context %q", name)
	}
	c, err := clientOf(rc)
	return c, name, err
}

// clientOf makes the client of a remote context, reading its token and CA files.
func clientOf(rc remoteContext) (*client.Client, error) {
	wc, err := front.Open(rc)
	if err != nil {
		return nil, err
	}
	return &client.Client{Client: wc}, nil
}

var contextNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

func newCmdContext(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "context", Short: "The daemons this CLI talks to: this machine's (local), or servers over HTTPS"}
	var add remoteContext
	addCmd := &cobra.Command{
		Use:   "add NAME URL --token-file FILE [--ca-file FILE]",
		Short: "Add a daemon serving the API over HTTPS (`paddock web --listen ... --tls-cert ... --tls-key ...` there)",
		Long: `Add a daemon serving the API over HTTPS, with a token made there by ` + "`paddock token create`" + `
kept in a file of its own. The daemon is asked for its version at once; a context whose daemon does
not answer is not added.

  paddock context add work https://server:7777 --token-file ~/.paddock-work-token
  paddock context use work ; paddock --context local ls ; paddock ls --all-contexts`,
		Args: exactArgs(2, "NAME and URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, rawURL := args[0], args[1]
			if !contextNameRE.MatchString(name) || name == LocalContext {
				return usagef("a context's name is lower-case letters, digits, '.', '_' and '-', and not %q", LocalContext)
			}
			if add.TokenFile == "" {
				return usagef("--token-file FILE is needed: a token made on the server with `paddock token create --name NAME`")
			}
			add.URL = rawURL
			for _, path := range []*string{&add.TokenFile, &add.CAFile} {
				if *path != "" {
					abs, err := filepath.Abs(*path)
					if err != nil {
						return err
					}
					*path = abs
				}
			}
			p, cf, err := f.contexts()
			if err != nil {
				return err
			}
			if _, dup := cf.Contexts[name]; dup {
				return apperr.Conflict("remove it first with `paddock context rm "+name+"`", "a context named %q exists", name)
			}
			c, err := clientOf(add)
			if err != nil {
				return apperr.Invalid("", "%v", err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			v, err := c.Version(ctx)
			if err != nil {
				return apperr.Unavailable("check the URL, the token, and that `paddock web` serves there (with --ca-file for a private CA)",
					"the daemon at %s does not answer: %v", rawURL, err)
			}
			cf.Contexts[name] = add
			if err := saveContexts(p, cf); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: added context %s: paddock %s at %s; use it with `paddock context use %s` or --context %s\n", name, v.Version, rawURL, name, name)
			return nil
		},
	}
	addCmd.Flags().StringVar(&add.TokenFile, "token-file", "", "a `FILE` holding the token ('paddock token create' makes one on the server)")
	addCmd.Flags().StringVar(&add.CAFile, "ca-file", "", "a PEM file of the CA that signed the server's certificate, besides the system's")

	useCmd := &cobra.Command{
		Use:   "use NAME",
		Short: "Talk to this context from now on (local: this machine's daemon)",
		Args:  exactArgs(1, "a context's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, cf, err := f.contexts()
			if err != nil {
				return err
			}
			if _, ok := cf.Contexts[args[0]]; !ok && args[0] != LocalContext {
				return apperr.NotFound("see `paddock context ls`", "no context %q", args[0])
			}
			cf.Current = args[0]
			if args[0] == LocalContext {
				cf.Current = ""
			}
			if err := saveContexts(p, cf); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: commands now talk to context %s\n", args[0])
			return nil
		},
	}
	var lsJSON bool
	lsCmd := &cobra.Command{
		Use:   "ls",
		Short: "List the contexts: NAME URL, the current one marked",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, cf, err := f.contexts()
			if err != nil {
				return err
			}
			current := f.contextName(cf)
			type row struct {
				Name    string `json:"name"`
				URL     string `json:"url"`
				Current bool   `json:"current"`
			}
			rows := []row{{LocalContext, "unix://" + p.Socket, current == LocalContext}}
			for _, name := range contextNames(cf) {
				rows = append(rows, row{name, cf.Contexts[name].URL, current == name})
			}
			if lsJSON {
				return writeJSON(f, rows)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tURL")
			for _, r := range rows {
				mark := ""
				if r.Current {
					mark = " *"
				}
				fmt.Fprintf(tw, "%s%s\t%s\n", r.Name, mark, r.URL)
			}
			return tw.Flush()
		},
	}
	lsCmd.Flags().BoolVar(&lsJSON, "json", false, "print JSON")
	rmCmd := &cobra.Command{
		Use:   "rm NAME",
		Short: "Forget a context (its token file is left where it is)",
		Args:  exactArgs(1, "a context's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, cf, err := f.contexts()
			if err != nil {
				return err
			}
			if _, ok := cf.Contexts[args[0]]; !ok {
				return apperr.NotFound("see `paddock context ls`", "no context %q", args[0])
			}
			delete(cf.Contexts, args[0])
			if cf.Current == args[0] {
				cf.Current = ""
				fmt.Fprintf(f.IO.ErrOut, "paddock: commands now talk to context %s\n", LocalContext)
			}
			return saveContexts(p, cf)
		},
	}
	cmd.AddCommand(addCmd, useCmd, lsCmd, rmCmd)
	return cmd
}

func contextNames(cf contextFile) []string {
	names := make([]string, 0, len(cf.Contexts))
	for n := range cf.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
