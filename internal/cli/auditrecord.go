package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/termtext"
)

// runRecord prints a sandbox's flight record (`paddock audit SANDBOX[/SESSION]`) or
// verifies records (`paddock audit --verify [SANDBOX]`).
func runRecord(ctx context.Context, f *Factory, opts *auditOptions, args []string) error {
	var sandbox, session string
	if len(args) == 1 {
		sandbox, session, _ = strings.Cut(args[0], "/")
		if sandbox == "" {
			return usagef("name a sandbox: paddock audit SANDBOX[/SESSION]")
		}
	}
	if opts.since != "" || opts.limit != 0 {
		return usagef("--since and --limit are for the daemon's audit log, not a sandbox's record (see `paddock audit --help`)")
	}
	if opts.verify && session != "" {
		return usagef("--verify checks a sandbox's whole record: give SANDBOX, not SANDBOX/SESSION")
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if opts.verify {
		return verifyRecords(ctx, f, opts, sandbox)
	}
	list, err := c.Record(ctx, sandbox, session)
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSON(f, list)
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tSESSION\tWHO\tWHAT")
	for _, e := range list {
		keys := make([]string, 0, len(e.Fields))
		for k := range e.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var what []string
		for _, k := range keys {
			what = append(what, k+"="+e.Fields[k])
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.Time.Local().Format("2006-01-02 15:04:05"), e.Kind,
			orDash(termtext.Escape(e.Session)), orDash(termtext.Escape(e.Who)), termtext.Escape(strings.Join(what, " ")))
	}
	return tw.Flush()
}

func verifyRecords(ctx context.Context, f *Factory, opts *auditOptions, sandbox string) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	reps, err := c.VerifyRecords(ctx, sandbox)
	if err != nil {
		return err
	}
	failed := 0
	for _, r := range reps {
		if !r.OK() {
			failed++
		}
	}
	if opts.json {
		if err := writeJSON(f, reps); err != nil {
			return err
		}
	} else {
		for _, r := range reps {
			verdict := "ok"
			if !r.OK() {
				verdict = "FAILED"
			}
			fmt.Fprintf(f.IO.Out, "%s: %s, %d entries, head %d (%s)\n", termtext.Escape(r.Sandbox), verdict, r.Entries, r.HeadSeq, r.Path)
			for _, p := range r.Problems {
				fmt.Fprintf(f.IO.Out, "  %s\n", termtext.Escape(p.String()))
			}
			for _, p := range r.Notes {
				fmt.Fprintf(f.IO.Out, "  note: %s\n", termtext.Escape(p.String()))
			}
		}
	}
	if failed > 0 {
		return apperr.CheckFailed("the record was changed on the host after it was written: see what each line above names",
			"%d flight record(s) failed verification", failed)
	}
	return nil
}

// noteMerge tells the sandbox's flight record of a merge `paddock merge` made on the
// host; the merge stands whatever the daemon answers, and a failure is said, not fatal.
func noteMerge(ctx context.Context, f *Factory, c *client.Client, sandbox string, done gitsync.MergeResult) {
	err := c.NoteMerge(ctx, sandbox, wire.MergeNote{Branch: done.Branch, Ref: done.Ref, Into: done.Into, Head: done.Head, New: done.New,
		Commits: done.Commits, Files: len(done.Files), FastForward: done.FastForward})
	if err != nil {
		fmt.Fprintf(f.IO.ErrOut, "paddock: the sandbox's flight record did not take the merge: %v\n", err)
	}
}
