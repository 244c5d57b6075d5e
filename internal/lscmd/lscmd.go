// Package lscmd is `paddock ls`'s table: the sandboxes of a daemon, each running one's
// sessions under it. It links only the API's wire client, so that the lean front serves
// the plain `paddock ls` itself, the command a user runs most; the full program prints
// the same table with the same code, and its --json and --all-contexts.
package lscmd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

// Sandbox is what the table shows of a sandbox's record: fields of sandbox.Info, by the
// same names on the wire.
type Sandbox struct {
	Name      string    `json:"name"`
	Backend   string    `json:"backend"`
	Runtime   string    `json:"runtime,omitempty"`
	State     string    `json:"state"`
	Network   string    `json:"network"`
	CreatedAt time.Time `json:"created_at"`
	Owner     string    `json:"owner,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	Usage     *Usage    `json:"usage,omitempty"`
	// Stale: the state is as last read (the backend was slow to answer).
	Stale bool `json:"stale,omitempty"`
	// Alarms counts the sandbox's standing alarms.
	Alarms int `json:"alarms,omitempty"`
}

// Session is what the table shows of a session: fields of session.Info.
type Session struct {
	Name   string `json:"name"`
	Agent  string `json:"agent"`
	Status string `json:"status"`
	// Stale: the status is as last read (the sandbox was slow to answer).
	Stale bool   `json:"stale,omitempty"`
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is what the table shows of model calls' usage: fields of store.UsageSum.
type Usage struct {
	Requests int64   `json:"requests"`
	CostUSD  float64 `json:"cost_usd"`
	Unpriced int64   `json:"unpriced_requests,omitempty"`
}

func (u *Usage) text() string {
	if u == nil {
		return termtext.Cost(0, 0, 0)
	}
	return termtext.Cost(u.Requests, u.Unpriced, u.CostUSD)
}

// Sessions returns the sessions of the sandboxes named (WithSessions), by sandbox name,
// as T (session.Info, or Session); a sandbox that cannot say has none.
func Sessions[T any](ctx context.Context, c *wire.Client, running []string) map[string][]T {
	var all map[string][]T
	if err := c.Do(ctx, http.MethodGet, "/v1/sessions", nil, &all); err != nil {
		// A daemon older than the one call: each sandbox is asked.
		all = map[string][]T{}
		for _, name := range running {
			var s []T
			if c.Do(ctx, http.MethodGet, wire.SandboxPath(name, "/sessions"), nil, &s) == nil {
				all[name] = s
			}
		}
		return all
	}
	keep := map[string]bool{}
	for _, name := range running {
		keep[name] = true
	}
	for name := range all {
		if !keep[name] {
			delete(all, name)
		}
	}
	return all
}

// WithSessions names the sandboxes whose sessions a listing shows: the running ones,
// and the stopped ones, whose sessions show as stopped (start resumes them).
func WithSessions(list []Sandbox) []string {
	var names []string
	for _, sb := range list {
		if sb.State == "running" || sb.State == "stopped" || sb.State == "suspended" {
			names = append(names, sb.Name)
		}
	}
	return names
}

// Run prints the table of the daemon's sandboxes to out, or on errOut that there are
// none yet.
func Run(ctx context.Context, c *wire.Client, out, errOut io.Writer) error {
	var list []Sandbox
	if err := c.Do(ctx, http.MethodGet, "/v1/sandboxes", nil, &list); err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(errOut, "no sandboxes yet: create one with `paddock up PATH`")
		return nil
	}
	sessions := Sessions[Session](ctx, c, WithSessions(list))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	// On a team's server, an admin sees whose each sandbox is (the host's own: "-").
	owners := false
	var waiting []string // the sessions that wait for the user, as SANDBOX/SESSION
	var alarmed []string // the sandboxes with standing alarms
	for _, sb := range list {
		owners = owners || sb.Owner != ""
	}
	header := "NAME\tBACKEND\tSTATE\tNETWORK\tAGE\tCOST"
	if owners {
		header += "\tOWNER"
	}
	fmt.Fprintln(tw, header)
	for _, sb := range list {
		backend := sb.Backend
		if sb.Runtime != "" {
			backend += "/" + sb.Runtime // docker/runsc: under gVisor
		}
		owner := ""
		if owners {
			owner = "\t-"
			if sb.Owner != "" {
				owner = "\t" + termtext.Escape(sb.Owner)
			}
		}
		state := sb.State
		if sb.Stale {
			state += " (last known)"
		}
		if sb.Alarms > 0 {
			state += " " + AlarmMark + " ALARM"
			alarmed = append(alarmed, sb.Name)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s%s\n", sb.Name, backend, state, sb.Network, termtext.Age(time.Since(sb.CreatedAt)), sb.Usage.text(), owner)
		if sb.Detail != "" && sb.State != "running" {
			// What the user must know ("VM crashed: restart to recover"): one cell, outside the columns.
			fmt.Fprintf(tw, "  %s\n", termtext.Escape(sb.Detail))
		}
		for _, s := range sessions[sb.Name] {
			status := s.Status
			if status == "waiting" {
				status = NeedsYouMark + " waiting for you"
				waiting = append(waiting, sb.Name+"/"+s.Name)
			}
			if s.Stale {
				status += " (last known)"
			}
			fmt.Fprintf(tw, "  %s/%s\t%s\t%s\t\t\t%s\n", sb.Name, s.Name, s.Agent, status, s.Usage.text())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := alarms(out, alarmed); err != nil {
		return err
	}
	return needsYou(out, waiting)
}

// AlarmMark marks, in ls, a sandbox whose agent went for its own controls.
const AlarmMark = "⚠"

// alarms says, under the table, which sandboxes have standing alarms and how to see them.
func alarms(out io.Writer, alarmed []string) error {
	if len(alarmed) == 0 {
		return nil
	}
	see := "paddock alarms " + alarmed[0]
	if len(alarmed) > 1 {
		see = "paddock alarms"
	}
	_, err := fmt.Fprintf(out, "\n%s an agent went for its own controls in %s: %s\n", AlarmMark, strings.Join(alarmed, ", "), see)
	return err
}

// NeedsYouMark marks, in ls, a session whose agent waits for the user.
const NeedsYouMark = "◆"

// needsYou says, under the table, which sessions wait for the user and how to answer.
func needsYou(out io.Writer, waiting []string) error {
	var err error
	switch len(waiting) {
	case 0:
	case 1:
		_, err = fmt.Fprintf(out, "\n%s %s waits for you: paddock chat %s\n", NeedsYouMark, waiting[0], waiting[0])
	default:
		_, err = fmt.Fprintf(out, "\n%s %d sessions wait for you: %s (paddock chat SANDBOX/SESSION)\n", NeedsYouMark, len(waiting), strings.Join(waiting, ", "))
	}
	return err
}
