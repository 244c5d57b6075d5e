package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
)

type netOptions struct {
	sandbox string
	global  bool
	denial  int64
	json    bool
	limit   int
}

// scope says which sandbox a rule is for: one named with --sandbox, or all with --global.
// One of the two is required, so that nobody opens every sandbox by accident.
func (o *netOptions) scope() (string, error) {
	if (o.sandbox == "") == !o.global {
		return "", usagef("say which sandboxes the rule is for: --sandbox NAME, or --global for all")
	}
	return o.sandbox, nil
}

func newCmdNet(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "net",
		Short: "The egress allowlist: what sandboxes may reach, and what they were refused",
		Long: `Sandboxes have no network but loopback. Their HTTP(S) traffic goes through paddock's egress
proxy, which allows only the allowlist: the defaults (the sandbox's agents' service hosts, package
registries, github.com), plus your rules, global or per sandbox. A sandbox rule beats a global one,
which beats a default; deny beats allow.

  paddock net allow example.com --sandbox myrepo     one sandbox
  paddock net allow '*.example.com' --global         every sandbox, any subdomain
  paddock net allow localhost:8080 --sandbox myrepo  a service on the host's loopback
  paddock net deny github.com --global               take a default away
  paddock net denials                                what was refused
  paddock net allow --denial 12                      allow what denial 12 was refused
  paddock net learn myrepo --for 2h                  record what it reaches for, then
  paddock net propose myrepo --apply                 allow what it used`,
	}
	cmd.AddCommand(newCmdNetRule(f, "allow"), newCmdNetRule(f, "deny"), newCmdNetRm(f), newCmdNetLs(f), newCmdNetDenials(f),
		newCmdNetLearn(f), newCmdNetPropose(f))
	return cmd
}

func newCmdNetRule(f *Factory, action string) *cobra.Command {
	opts := &netOptions{}
	cmd := &cobra.Command{
		Use:   action + " PATTERN (--sandbox NAME | --global)",
		Short: map[string]string{"allow": "Allow a host, *.domain or host:port", "deny": "Deny a host, *.domain or host:port"}[action],
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if action == "allow" && opts.denial != 0 {
				if len(args) != 0 || opts.sandbox != "" || opts.global {
					return usagef("--denial takes no pattern and no scope: the denial says both")
				}
				c, err := f.Client(ctx)
				if err != nil {
					return err
				}
				rule, err := c.AllowDenial(ctx, opts.denial)
				if err != nil {
					return err
				}
				fmt.Fprintf(f.IO.ErrOut, "paddock: allowed %s for sandbox %s\n", rule.Pattern, rule.Scope)
				return nil
			}
			if len(args) != 1 {
				return usagef("%s takes one pattern: a host (example.com), *.domain or host:port", action)
			}
			scope, err := opts.scope()
			if err != nil {
				return err
			}
			c, err := f.Client(ctx)
			if err != nil {
				return err
			}
			rule, err := c.SetNetRule(ctx, wire.NetRuleRequest{Sandbox: scope, Pattern: args[0], Action: action})
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: %s %s (%s)\n", map[string]string{"allow": "allowed", "deny": "denied"}[action], rule.Pattern, rule.Scope)
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.sandbox, "sandbox", "", "the sandbox the rule is for")
	cmd.Flags().BoolVar(&opts.global, "global", false, "the rule is for every sandbox")
	if action == "allow" {
		cmd.Flags().Int64Var(&opts.denial, "denial", 0, "allow what the denial of this `ID` ('paddock net denials' lists them) was refused, for its sandbox")
	}
	return cmd
}

func newCmdNetRm(f *Factory) *cobra.Command {
	opts := &netOptions{}
	cmd := &cobra.Command{
		Use:   "rm PATTERN (--sandbox NAME | --global)",
		Short: "Remove one of your rules",
		Args:  exactArgs(1, "one pattern"),
		RunE: func(cmd *cobra.Command, args []string) error {
			scope, err := opts.scope()
			if err != nil {
				return err
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := c.RemoveNetRule(cmd.Context(), scope, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: removed the rule for %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.sandbox, "sandbox", "", "the sandbox the rule is for")
	cmd.Flags().BoolVar(&opts.global, "global", false, "a rule for every sandbox")
	return cmd
}

func newCmdNetLs(f *Factory) *cobra.Command {
	opts := &netOptions{}
	cmd := &cobra.Command{
		Use:   "ls [--sandbox NAME]",
		Short: "List the rules that apply to a sandbox (defaults included), or the global rules",
		Args:  exactArgs(0, "no arguments (use --sandbox NAME)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			rules, err := c.NetRules(cmd.Context(), opts.sandbox)
			if err != nil {
				return err
			}
			if opts.json {
				return writeJSON(f, rules)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ACTION\tPATTERN\tSCOPE")
			for _, r := range rules {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Action, r.Pattern, r.Scope)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if learning, err := c.NetLearnings(cmd.Context()); err == nil {
				for _, l := range learning {
					if opts.sandbox == "" || l.Sandbox == opts.sandbox {
						fmt.Fprintf(f.IO.ErrOut, "sandbox %s is learning until %s: see paddock net propose %s\n", l.Sandbox, l.Until, l.Sandbox)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.sandbox, "sandbox", "", "the sandbox whose rules to list")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func newCmdNetDenials(f *Factory) *cobra.Command {
	opts := &netOptions{}
	cmd := &cobra.Command{
		Use:   "denials [--sandbox NAME]",
		Short: "List refused egress requests, newest last",
		Long: `List refused egress requests, newest last. Identical requests (same sandbox, host and
port) refused within a minute of the first are one line: COUNT says how many, TIME when
the last was. Each sandbox keeps its newest 1,000; removing a sandbox removes its own.`,
		Args: exactArgs(0, "no arguments (use --sandbox NAME)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			list, err := c.Denials(cmd.Context(), opts.sandbox, opts.limit)
			if err != nil {
				return err
			}
			if opts.json {
				return writeJSON(f, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(f.IO.ErrOut, "no denials")
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTIME\tSANDBOX\tHOST\tPORT\tCOUNT\tREASON")
			for _, d := range list {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", d.ID, d.LastSeen, d.Sandbox, d.Host, strconv.Itoa(d.Port), d.Count, d.Reason)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "allow one with: paddock net allow --denial %d\n", list[len(list)-1].ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.sandbox, "sandbox", "", "only this sandbox's denials")
	cmd.Flags().IntVar(&opts.limit, "limit", 50, "at most this many, the newest (0: all)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func writeJSON(f *Factory, v any) error {
	enc := json.NewEncoder(f.IO.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
