package cli

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/termtext"
)

type auditOptions struct {
	since string
	limit int
	json  bool
	// verify checks flight records instead of listing (auditrecord.go).
	verify bool
}

func newCmdAudit(f *Factory) *cobra.Command {
	opts := &auditOptions{}
	cmd := &cobra.Command{
		Use:   "audit [SANDBOX[/SESSION]] [--verify] [--since 24h] [--json]",
		Short: "Who did what: the daemon's audit log (admins), or a sandbox's flight record",
		Long: `The audit log: every request that changed something, ran a process in a sandbox or read its
files, and every sign-in (and sign-in refused, and membership revoked), with who (a GitHub
login, "token NAME", "browser" or "local" for this machine's socket), the sandbox, the status
answered and where from. Admins only: this machine's user, and [auth.github] admins.

With a sandbox, its flight record instead: a hash-chained record, kept on the host, of
every process run in it for a client, every network request its proxy decided, every
model call through the credential proxy, every sync, merge, copy out and snapshot; with
SANDBOX/SESSION, that session's entries. --verify checks the chain of a sandbox's record
(of every record, for admins, without a sandbox) and exits 6 naming each entry changed,
removed or cut off. A record outlives its sandbox's rm.

  paddock audit --since 24h
  paddock --context work audit --json
  paddock audit web/main --json
  paddock audit --verify web`,
		Args: maxArgs(1, "at most a sandbox (SANDBOX or SANDBOX/SESSION)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 || opts.verify {
				return runRecord(cmd.Context(), f, opts, args)
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			list, err := c.Audit(cmd.Context(), opts.since, opts.limit)
			if err != nil {
				return err
			}
			if opts.json {
				return writeJSON(f, list)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tWHO\tACTION\tSANDBOX\tSTATUS\tFROM\tDETAIL")
			for _, e := range list {
				status := "-"
				if e.Status != 0 {
					status = strconv.Itoa(e.Status)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format("2006-01-02 15:04:05"), termtext.Escape(e.Who),
					termtext.Escape(e.Action), orDash(termtext.Escape(e.Sandbox)), status, orDash(e.Remote), termtext.Escape(e.Detail))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&opts.since, "since", "", "only entries since then: a duration back (24h) or a time (RFC 3339)")
	cmd.Flags().IntVar(&opts.limit, "limit", 0, "at most this many of the newest entries")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&opts.verify, "verify", false, "check the chain of SANDBOX's flight record (every record: admins)")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
