package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
)

type tokenOptions struct {
	name     string
	readOnly bool
	json     bool
}

func newCmdToken(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Tokens for the API over TCP (paddock web): create, list, revoke",
		Long: `A token lets a program or a phone use the API that ` + "`paddock web`" + ` serves over TCP: it sends
"Authorization: Bearer TOKEN" with every request. The daemon keeps only a hash of each token, so
it is shown once, when created. A read-only token may only read (GET): it cannot run commands,
type into sessions, change rules, or start, stop, create or remove sandboxes.

  paddock token create --name phone --read-only
  paddock token ls
  paddock token revoke phone`,
	}
	cmd.AddCommand(newCmdTokenCreate(f), newCmdTokenLs(f), newCmdTokenRevoke(f))
	return cmd
}

func newCmdTokenCreate(f *Factory) *cobra.Command {
	opts := &tokenOptions{}
	cmd := &cobra.Command{
		Use:   "create --name NAME [--read-only]",
		Short: "Create a token and print it, this once",
		Args:  exactArgs(0, "no arguments (use --name NAME)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.name == "" {
				return usagef("name the token: --name NAME (e.g. --name phone)")
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			t, err := c.CreateToken(cmd.Context(), wire.TokenRequest{Name: opts.name, ReadOnly: opts.readOnly})
			if err != nil {
				return err
			}
			if opts.json {
				return writeJSON(f, t)
			}
			fmt.Fprintln(f.IO.Out, t.Token)
			kind := "full access"
			if t.ReadOnly {
				kind = "read-only"
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: created token %s (%s); it is shown only this once. Send it as \"Authorization: Bearer TOKEN\"; revoke it with `paddock token revoke %s`\n",
				t.Name, kind, t.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.name, "name", "", "what the token is for, e.g. phone")
	cmd.Flags().BoolVar(&opts.readOnly, "read-only", false, "the token may only read (GET)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON (with the token)")
	return cmd
}

func newCmdTokenLs(f *Factory) *cobra.Command {
	opts := &tokenOptions{}
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the tokens (never their secrets)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			list, err := c.Tokens(cmd.Context())
			if err != nil {
				return err
			}
			if opts.json {
				return writeJSON(f, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(f.IO.ErrOut, "no tokens yet: create one with `paddock token create --name NAME`")
				return nil
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tREAD-ONLY\tCREATED\tLAST USED")
			for _, t := range list {
				used := "never"
				if t.LastUsed != nil {
					used = age(time.Since(*t.LastUsed)) + " ago"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, map[bool]string{true: "yes", false: "no"}[t.ReadOnly], age(time.Since(t.Created))+" ago", used)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func newCmdTokenRevoke(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a token: requests with it are refused from now on",
		Args:  exactArgs(1, "one token name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := c.RevokeToken(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "paddock: revoked token %s\n", args[0])
			return nil
		},
	}
}
