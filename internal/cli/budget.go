package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/config/cost"
	"github.com/paddockhq/paddock/internal/termtext"
)

func newCmdBudget(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "Bound what a sandbox or session may spend on model calls: set, list, remove",
		Long: `A budget bounds the estimated cost (US dollars, from the price table) and/or the tokens
(input, output, cache reads and writes together) of a sandbox's model calls, or of one
session's. At 80% the daemon emits a budget-warning event; once it is spent, the credential
proxy answers the agent's next model call with the provider's own error, saying so and how
to raise it, and the agent shows it. Raising the budget lets the session go on. The config's
[budget] usd = N, tokens = N is every sandbox's budget unless it has its own.

  paddock budget set myrepo --usd 5
  paddock budget set myrepo/fix-auth --tokens 2000000
  paddock budget ls
  paddock budget rm myrepo`,
	}
	cmd.AddCommand(newCmdBudgetSet(f), newCmdBudgetLs(f), newCmdBudgetRm(f))
	return cmd
}

func newCmdBudgetSet(f *Factory) *cobra.Command {
	var l cost.Limit
	cmd := &cobra.Command{
		Use:   "set SANDBOX[/SESSION] [--usd N] [--tokens N]",
		Short: "Set the budget of a sandbox or of one of its sessions",
		Args:  exactArgs(1, "SANDBOX[/SESSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if l.USD <= 0 && l.Tokens <= 0 {
				return usagef("give --usd N and/or --tokens N (to remove a budget: paddock budget rm %s)", args[0])
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			sb, session, _ := strings.Cut(args[0], "/")
			b, err := c.SetBudget(cmd.Context(), sb, session, l)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: the budget of %s is %s; spent so far %s\n", args[0], limitWords(b.Limit), spentWords(b))
			return nil
		},
	}
	cmd.Flags().Float64Var(&l.USD, "usd", 0, "bound the estimated cost, in US dollars")
	cmd.Flags().Int64Var(&l.Tokens, "tokens", 0, "bound the tokens: input, output, cache reads and writes together")
	return cmd
}

func newCmdBudgetRm(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "rm SANDBOX[/SESSION]",
		Short: "Remove the budget of a sandbox (which then has the config's default) or session",
		Args:  exactArgs(1, "SANDBOX[/SESSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			sb, session, _ := strings.Cut(args[0], "/")
			b, err := c.SetBudget(cmd.Context(), sb, session, cost.Limit{})
			if err != nil {
				return err
			}
			if b.Default {
				fmt.Fprintf(f.IO.ErrOut, "paddock: %s has the config's default budget now: %s\n", args[0], limitWords(b.Limit))
				return nil
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: %s has no budget now\n", args[0])
			return nil
		},
	}
}

func newCmdBudgetLs(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the budgets and what each has spent",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			list, err := c.Budgets(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f, list)
			}
			if list.Default.USD > 0 || list.Default.Tokens > 0 {
				fmt.Fprintf(f.IO.ErrOut, "every sandbox without its own budget has the config's: %s\n", limitWords(list.Default))
			}
			if len(list.Budgets) == 0 {
				fmt.Fprintln(f.IO.ErrOut, "no budgets: set one with `paddock budget set SANDBOX --usd N`")
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SANDBOX/SESSION\tBUDGET\tSPENT (EST.)\tUSED")
			for _, b := range list.Budgets {
				who := b.Sandbox
				if b.Session != "" {
					who += "/" + b.Session
				}
				budget := limitWords(b.Limit)
				if b.Default {
					budget += " (default)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f%%\n", termtext.Escape(who), budget, spentWords(b), 100*share(b))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func limitWords(l cost.Limit) string {
	var parts []string
	if l.USD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", l.USD))
	}
	if l.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%s tokens", tokens(l.Tokens)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " and ")
}

func spentWords(b wire.Budget) string {
	return fmt.Sprintf("~$%.2f, %s tokens", b.Spent.CostUSD, tokens(b.Spent.Total()))
}

func share(b wire.Budget) float64 {
	var s float64
	if b.USD > 0 {
		s = b.Spent.CostUSD / b.USD
	}
	if b.Tokens > 0 {
		s = max(s, float64(b.Spent.Total())/float64(b.Tokens))
	}
	return s
}
