package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

type usageOptions struct {
	target string
	since  string
	json   bool
}

func newCmdUsage(f *Factory) *cobra.Command {
	opts := &usageOptions{}
	cmd := &cobra.Command{
		Use:   "usage [SANDBOX[/SESSION]] [--since 24h] [--json]",
		Short: "What the agents' model calls used: tokens in and out, cache reads and writes, requests, estimated cost",
		Long: `Every model call an agent makes goes through the daemon's credential proxy, which reads the
usage the provider's answer reports (streamed answers included) and records it. Costs are
estimates from a price table (the providers' list prices, and the config's [prices."MODEL"]),
not the providers' bills.

  paddock usage                      every sandbox, by session and model
  paddock usage myrepo/fix-auth      one session
  paddock usage --since 24h --json`,
		Args: maxArgs(1, "at most SANDBOX[/SESSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.target = args[0]
			}
			return runUsage(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.since, "since", "", "only calls since then: a duration back (24h) or a time (RFC 3339)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func runUsage(ctx context.Context, f *Factory, opts *usageOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	sb, session, _ := strings.Cut(opts.target, "/")
	rep, err := c.Usage(ctx, sb, session, opts.since)
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(f, rep)
	}
	if len(rep.Groups) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "no model calls recorded yet")
		return nil
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SANDBOX/SESSION\tMODEL\tREQUESTS\tINPUT\tOUTPUT\tCACHE READ\tCACHE WRITE\tCOST (EST.)")
	for _, g := range rep.Groups {
		who := g.Sandbox
		if g.Session != "" {
			who += "/" + g.Session
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", termtext.Escape(who), orDash(termtext.Escape(g.Model)), usageCells(g.UsageSum))
	}
	if len(rep.Groups) > 1 {
		fmt.Fprintf(tw, "total\t\t%s\n", usageCells(rep.Total))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(f.IO.ErrOut, "costs are estimates from the price table (`paddock config` [prices.\"MODEL\"]), not the providers' bills")
	if rep.Total.Unpriced > 0 {
		fmt.Fprintf(f.IO.ErrOut, "%d calls were to models with no known price (cost \"?\"): add [prices.\"MODEL\"] to the config\n", rep.Total.Unpriced)
	}
	return nil
}

func usageCells(s wire.UsageSum) string {
	return fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s", s.Requests, tokens(s.InputTokens), tokens(s.OutputTokens),
		tokens(s.CacheReadTokens), tokens(s.CacheWriteTokens), wire.CostText(&s))
}

// tokens is a token count for people: 950, 12.3k, 4.5M.
func tokens(n int64) string {
	switch {
	case n < 10_000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}
