package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

type alarmsOptions struct {
	sandbox string
	json    bool
	all     bool
	clear   bool
	id      int64
}

func newCmdAlarms(f *Factory) *cobra.Command {
	opts := &alarmsOptions{}
	cmd := &cobra.Command{
		Use:   "alarms [SANDBOX] [--clear [ID]]",
		Short: "List the alarms raised when an agent went for its own controls; --clear acknowledges them",
		Long: `List the standing alarms of a sandbox, or of every sandbox: an agent wrote its own agent's
configuration or hooks, the workspace's git hooks or config or a file the host runs once
merged, reached for /proc/PID/root of a process, or asked the egress proxy for host names
shaped to carry data. An alarm does not stop the agent unless [alarms] stop is set.

--clear acknowledges the sandbox's standing alarms (all, or the one ID): ls shows no mark
until the next.`,
		Args: maxArgs(2, "at most a sandbox and, with --clear, an alarm's ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.sandbox = args[0]
			}
			if len(args) == 2 {
				if !opts.clear {
					return usagef("an alarm's ID goes with --clear: paddock alarms %s --clear %s", args[0], args[1])
				}
				id, err := strconv.ParseInt(args[1], 10, 64)
				if err != nil || id <= 0 {
					return usagef("%q is not an alarm's ID: `paddock alarms %s` lists them", args[1], args[0])
				}
				opts.id = id
			}
			if opts.clear && opts.sandbox == "" {
				return usagef("--clear takes the sandbox whose alarms to clear: paddock alarms SANDBOX --clear")
			}
			return runAlarms(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&opts.all, "all", false, "the cleared alarms too")
	cmd.Flags().BoolVar(&opts.clear, "clear", false, "acknowledge the sandbox's standing alarms (all, or the one ID)")
	return cmd
}

func runAlarms(ctx context.Context, f *Factory, opts *alarmsOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if opts.clear {
		body, _ := json.Marshal(wire.ClearAlarmsRequest{ID: opts.id})
		var res wire.ClearAlarmsResponse
		if err := c.Do(ctx, http.MethodPost, wire.SandboxPath(opts.sandbox, "/alarms/clear"), bytes.NewReader(body), &res); err != nil {
			return err
		}
		if opts.json {
			return writeJSON(f, res)
		}
		fmt.Fprintf(f.IO.ErrOut, "cleared %d alarm(s) of %s\n", res.Cleared, opts.sandbox)
		return nil
	}
	path := "/v1/alarms"
	if opts.sandbox != "" {
		path = wire.SandboxPath(opts.sandbox, "/alarms")
	}
	if opts.all {
		path += "?all=1"
	}
	var list []wire.Alarm
	if err := c.Do(ctx, http.MethodGet, path, nil, &list); err != nil {
		return err
	}
	tw, err := listing(f, opts.json, list, "no alarms", "ID\tSANDBOX\tAGE\tKIND\tSEEN IN\tWHAT")
	if tw == nil {
		return err
	}
	for _, a := range list {
		where := a.Sandbox
		if a.Session != "" {
			where += "/" + a.Session
		}
		kind := a.Kind
		if !a.Cleared.IsZero() {
			kind += " (cleared)"
		}
		// The detail is the sandbox's text: escaped, and kept to one line.
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", a.ID, termtext.Escape(where), termtext.Age(time.Since(a.Time)), kind, a.Source, termtext.Escape(strings.Join(strings.Fields(a.Detail), " ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if opts.sandbox != "" && !opts.all {
		fmt.Fprintf(f.IO.ErrOut, "acknowledge them with: paddock alarms %s --clear\n", opts.sandbox)
	}
	return nil
}
