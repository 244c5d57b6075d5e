package cli

import (
	"context"
	"fmt"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/config"
	"github.com/paddockhq/paddock/internal/lscmd"
	"github.com/paddockhq/paddock/internal/termtext"
)

type lsOptions struct {
	json        bool
	allContexts bool
}

func newCmdLs(f *Factory) *cobra.Command {
	opts := &lsOptions{}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List sandboxes: NAME BACKEND[/RUNTIME] STATE NETWORK AGE COST (estimated, of model calls)",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLs(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&opts.allContexts, "all-contexts", false, "every context's sandboxes, with the context as a column (see 'paddock context ls')")
	return cmd
}

func runLs(ctx context.Context, f *Factory, opts *lsOptions) error {
	if opts.allContexts {
		return runLsAll(ctx, f, opts)
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if !opts.json {
		return lscmd.Run(ctx, c.Client, f.IO.Out, f.IO.ErrOut)
	}
	list, err := c.List(ctx)
	if err != nil {
		return err
	}
	shown := make([]lscmd.Sandbox, len(list))
	for i, sb := range list {
		shown[i] = lscmd.Sandbox{Name: sb.Name, State: sb.State}
	}
	sessions := lscmd.Sessions[wire.SessionInfo](ctx, c.Client, lscmd.WithSessions(shown))
	type entry struct {
		wire.SandboxInfo
		Sessions []wire.SessionInfo `json:"sessions"`
	}
	out := []entry{}
	for _, sb := range list {
		s := sessions[sb.Name]
		if s == nil {
			s = []wire.SessionInfo{}
		}
		out = append(out, entry{sb, s})
	}
	return writeJSON(f, out)
}

// age is termtext.Age.
func age(d time.Duration) string { return termtext.Age(d) }

// apiClient is a client that does not start a daemon.
func apiClient(p config.Paths) *client.Client { return client.NewClient(p.Socket) }

// runLsAll lists the sandboxes of every context, each daemon asked at once; one that
// does not answer is shown as such, and the others still are.
func runLsAll(ctx context.Context, f *Factory, opts *lsOptions) error {
	p, cf, err := f.contexts()
	if err != nil {
		return err
	}
	names := append([]string{LocalContext}, contextNames(cf)...)
	type answer struct {
		list []wire.SandboxInfo
		err  error
	}
	answers := make([]answer, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			var c *client.Client
			var err error
			if name == LocalContext {
				c, err = f.localClient(actx, p)
			} else {
				c, err = clientOf(cf.Contexts[name])
			}
			if err == nil {
				answers[i].list, err = c.List(actx)
			}
			answers[i].err = err
		}()
	}
	wg.Wait()
	if opts.json {
		type entry struct {
			Context string `json:"context"`
			wire.SandboxInfo
		}
		type failure struct {
			Context string `json:"context"`
			Error   string `json:"error"`
		}
		out := struct {
			Sandboxes   []entry   `json:"sandboxes"`
			Unreachable []failure `json:"unreachable"`
		}{Sandboxes: []entry{}, Unreachable: []failure{}}
		for i, a := range answers {
			if a.err != nil {
				out.Unreachable = append(out.Unreachable, failure{names[i], a.err.Error()})
			}
			for _, sb := range a.list {
				out.Sandboxes = append(out.Sandboxes, entry{names[i], sb})
			}
		}
		return writeJSON(f, out)
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTEXT\tNAME\tBACKEND\tSTATE\tNETWORK\tAGE")
	for i, a := range answers {
		if a.err != nil {
			fmt.Fprintf(tw, "%s\t-\t-\tunreachable\t\t\n  %s\n", names[i], termtext.Escape(a.err.Error()))
			continue
		}
		for _, sb := range a.list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", names[i], sb.Name, sb.Backend, sb.State, sb.Network, age(time.Since(sb.CreatedAt)))
		}
	}
	return tw.Flush()
}
