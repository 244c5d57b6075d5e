package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

type eventsOptions struct {
	sandbox  string
	since    string
	until    string
	noFollow bool
	last     int
	json     bool
}

func newCmdEvents(f *Factory) *cobra.Command {
	opts := &eventsOptions{}
	cmd := &cobra.Command{
		Use:   "events [--sandbox NAME] [--since 1h | --last N] [--until TIME | --no-follow] [--json]",
		Short: "Show what happened in sandboxes lately, then follow: TIME SANDBOX KIND DETAIL, until Ctrl-C",
		Long: `Print the last 20 recorded events, then each new one as it happens: sandboxes created,
started, stopped and removed; sessions started, their status (working, waiting, idle) and
their exit; ports that open and close inside; branches that move; syncs; refused egress.

With --since, the recorded events from then come first instead; --last N sets how many
(0: only new ones). With --until or --no-follow, only recorded events are printed, and the
command exits. --since and --until take a duration
back from now (10m, 1h), a time (2006-01-02T15:04:05Z, "2006-01-02 15:04", 2006-01-02);
--since also takes a seq (the "seq" of --json), to resume after it.`,
		Args: exactArgs(0, "no arguments (name the sandbox with --sandbox)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEvents(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.sandbox, "sandbox", "", "only this sandbox's events")
	cmd.Flags().StringVar(&opts.since, "since", "", "print the recorded events from this time (or after this seq) first")
	cmd.Flags().StringVar(&opts.until, "until", "", "print the recorded events up to this time, and exit")
	cmd.Flags().BoolVar(&opts.noFollow, "no-follow", false, "print the recorded events, and exit")
	cmd.Flags().IntVar(&opts.last, "last", 20, "without --since: print this many recorded events first (0: only new ones)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object per line")
	return cmd
}

func runEvents(ctx context.Context, f *Factory, opts *eventsOptions) error {
	now := time.Now()
	if opts.since != "" {
		if _, err := wire.ParsePoint(opts.since, now, true); err != nil {
			return usagef("--since: %v", err)
		}
	}
	if opts.until != "" {
		if _, err := wire.ParsePoint(opts.until, now, false); err != nil {
			return usagef("--until: %v", err)
		}
	}
	if opts.last < 0 {
		return usagef("--last: %d is not a number of events (0 prints only new ones)", opts.last)
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	q := wire.EventsQuery{Sandbox: opts.sandbox, Since: opts.since, Until: opts.until, NoFollow: opts.noFollow}
	switch {
	case opts.noFollow && q.Since == "":
		q.Since = "0" // the whole recorded history
	case q.Since == "" && q.Until == "":
		q.Last = opts.last // the latest events, then the new ones
	}
	enc := json.NewEncoder(f.IO.Out)
	return c.Events(ctx, q, func(ev wire.Event) error {
		if opts.json {
			return enc.Encode(ev)
		}
		_, err := fmt.Fprintln(f.IO.Out, eventLine(ev))
		return err
	})
}

// eventLine is an event as one line for people: TIME SANDBOX KIND DETAIL. What came
// from inside a sandbox is shown with its control characters escaped, newlines and tabs
// too, so that it cannot pass for another line.
func eventLine(ev wire.Event) string {
	detail := ev.Detail
	if detail == "" && ev.Session != "" {
		detail = ev.Session
	}
	line := fmt.Sprintf("%s %s %s %s", ev.Time.Local().Format("2006-01-02T15:04:05.000Z07:00"), ev.Sandbox, ev.Kind, detail)
	return oneLine.Replace(termtext.Escape(strings.TrimRight(line, " ")))
}

var oneLine = strings.NewReplacer("\n", `\n`, "\t", `\t`)
