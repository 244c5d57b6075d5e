package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
)

type netLearnOptions struct {
	duration time.Duration
	stop     bool
	json     bool
}

func newCmdNetLearn(f *Factory) *cobra.Command {
	opts := &netLearnOptions{}
	cmd := &cobra.Command{
		Use:   "learn [SANDBOX] [--for DURATION | --stop]",
		Short: "Record what a sandbox reaches for, to propose its allowlist (no SANDBOX: list those learning)",
		Long: `Learn mode records every request a sandbox's egress proxy decides, allowed or refused
(host and port; for plain HTTP also the method and path, without its query), for a while
(--for, an hour by default; it survives a daemon restart). It allows nothing new: use the
sandbox as usual, then 'paddock net propose SANDBOX' shows the rules that would have
allowed what it used. Learning again starts afresh; --stop ends it early.

  paddock net learn myrepo --for 2h
  paddock net propose myrepo
  paddock net propose myrepo --apply`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) == 0 {
				if opts.stop || cmd.Flags().Changed("for") {
					return usagef("name the sandbox: paddock net learn SANDBOX")
				}
				c, err := f.Client(ctx)
				if err != nil {
					return err
				}
				list, err := c.NetLearnings(ctx)
				if err != nil {
					return err
				}
				if opts.json {
					return writeJSON(f, list)
				}
				if len(list) == 0 {
					fmt.Fprintln(f.IO.ErrOut, "no sandbox is learning: start with paddock net learn SANDBOX")
					return nil
				}
				tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SANDBOX\tSINCE\tUNTIL")
				for _, l := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Sandbox, l.Since, l.Until)
				}
				return tw.Flush()
			}
			if opts.stop && cmd.Flags().Changed("for") {
				return usagef("give --for or --stop, not both")
			}
			if opts.duration <= 0 {
				return usagef("--for takes a duration such as 30m, 2h or 24h")
			}
			c, err := f.Client(ctx)
			if err != nil {
				return err
			}
			var l wire.Learning
			if opts.stop {
				l, err = c.StopNetLearning(ctx, args[0])
			} else {
				l, err = c.StartNetLearning(ctx, args[0], opts.duration)
			}
			if err != nil {
				return err
			}
			if opts.json {
				return writeJSON(f, l)
			}
			if opts.stop {
				fmt.Fprintf(f.IO.ErrOut, "paddock: sandbox %s stopped learning: %s\nsee the rules it proposes with: paddock net propose %s\n",
					l.Sandbox, learnedSummary(l), l.Sandbox)
				return nil
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: sandbox %s is learning until %s; nothing new is allowed meanwhile\n"+
				"use it as usual, then see the rules it proposes with: paddock net propose %s\n", l.Sandbox, l.Until, l.Sandbox)
			return nil
		},
	}
	cmd.Flags().DurationVar(&opts.duration, "for", wire.DefaultLearnFor, "learn for this long (30m, 2h, 24h; at most 168h)")
	cmd.Flags().BoolVar(&opts.stop, "stop", false, "stop learning now, keeping what was learned")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

// learnedSummary says in words how much a learn mode recorded.
func learnedSummary(l wire.Learning) string {
	s := fmt.Sprintf("%d requests to %d destinations", l.Requests, l.Destinations)
	if l.Dropped > 0 {
		s += fmt.Sprintf(" (and %d requests to destinations past the 1,000 kept, not recorded)", l.Dropped)
	}
	return s
}

type netProposeOptions struct {
	apply bool
	prune bool
	json  bool
}

func newCmdNetPropose(f *Factory) *cobra.Command {
	opts := &netProposeOptions{}
	cmd := &cobra.Command{
		Use:   "propose SANDBOX [--apply] [--prune] [--json]",
		Short: "The allowlist that would have allowed what a learning sandbox used, as a diff",
		Long: `Propose prints the smallest set of rules that would have allowed what the sandbox reached
for while it learned ('paddock net learn'), as a diff against its rules today: each rule
with how many requests it allowed or refused (or "never used"), and "+" before a rule to
add for the sandbox. A destination needs its host (host:port off ports 80 and 443); three
or more subdomains of one registrable domain become *.domain (never a public suffix such
as *.co.uk or *.github.io); a destination your deny rule refused stays refused.

--apply adds them, as 'paddock net allow' would; with --prune the sandbox's own allow
rules that allowed nothing are removed too ("-"), and otherwise only marked.`,
		Args: exactArgs(1, "one sandbox"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := f.Client(ctx)
			if err != nil {
				return err
			}
			var p wire.Proposal
			if opts.apply {
				p, err = c.ApplyNetProposal(ctx, args[0], opts.prune)
			} else {
				p, err = c.NetProposal(ctx, args[0], opts.prune)
			}
			if err != nil {
				return err
			}
			if opts.json {
				return writeJSON(f, p)
			}
			return printProposal(f.IO.Out, f.IO.ErrOut, p, opts.prune)
		},
	}
	cmd.Flags().BoolVar(&opts.apply, "apply", false, "add the proposed rules to the sandbox")
	cmd.Flags().BoolVar(&opts.prune, "prune", false, "propose removing the sandbox's own allow rules that allowed nothing")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

// printProposal writes a proposal as a diff on out, and what it means on errOut.
func printProposal(out, errOut io.Writer, p wire.Proposal, prune bool) error {
	l := p.Learning
	state := "learned"
	if l.Active {
		state = "learning"
	}
	fmt.Fprintf(errOut, "sandbox %s, %s from %s until %s: %s\n", l.Sandbox, state, l.Since, l.Until, learnedSummary(l))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	adds, removes, unused := 0, 0, 0
	for _, ln := range p.Lines {
		var use string
		switch {
		case ln.Op == "+":
			adds++
			use = fmt.Sprintf("%d refused: %s", ln.Requests, strings.Join(ln.Hosts, " "))
		case ln.Requests > 0 && ln.Action == "deny":
			use = fmt.Sprintf("%d refused: %s", ln.Requests, strings.Join(ln.Hosts, " "))
		case ln.Requests > 0:
			use = fmt.Sprintf("%d allowed: %s", ln.Requests, strings.Join(ln.Hosts, " "))
		default:
			use = "never used"
			if ln.Op == "-" {
				removes++
			} else if ln.Scope == l.Sandbox && ln.Action == "allow" {
				unused++
			}
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\n", ln.Op, ln.Action, ln.Pattern, ln.Scope, use)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range p.Refused {
		fmt.Fprintf(errOut, "kept refused: %s:%d (%s), %d requests\n", d.Host, d.Port, d.Reason, d.Requests)
	}
	for _, d := range p.Suspect {
		fmt.Fprintf(errOut, "left out: %s:%d (%s: see paddock alarms %s), %d requests\n", d.Host, d.Port, d.Reason, l.Sandbox, d.Requests)
	}
	switch {
	case p.Applied && adds+removes > 0:
		fmt.Fprintf(errOut, "paddock: applied to sandbox %s: %d rules added, %d removed\n", l.Sandbox, adds, removes)
	case p.Applied:
		fmt.Fprintf(errOut, "paddock: nothing to apply to sandbox %s\n", l.Sandbox)
	case adds+removes > 0:
		flags := ""
		if prune {
			flags = " --prune"
		}
		fmt.Fprintf(errOut, "apply with: paddock net propose %s --apply%s\n", l.Sandbox, flags)
	default:
		fmt.Fprintf(errOut, "nothing to add: the rules allowed all that sandbox %s used\n", l.Sandbox)
	}
	if unused > 0 && !prune {
		fmt.Fprintf(errOut, "%d of the sandbox's own allow rules were never used: --prune removes them\n", unused)
	}
	return nil
}
