package servecmd

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/paddockhq/paddock/internal/backend/conform"
	"github.com/paddockhq/paddock/internal/termtext"
)

// writeVerify writes verify's report for people: per backend its tier and versions, a
// line per check, what was left behind and a summary line; then the backends skipped.
func writeVerify(w io.Writer, r verifyReport) {
	for _, bv := range r.Backends {
		fmt.Fprintf(w, "%s (isolation: %s)\n", bv.Name, tierLabel(bv.Isolation))
		var vs []string
		for k, v := range bv.Versions {
			vs = append(vs, k+" "+v)
		}
		slices.Sort(vs)
		fmt.Fprintf(w, "  versions: %s\n", strings.Join(vs, ", "))
		writeChecks(w, bv.Checks)
		if len(bv.LeftBehind) > 0 {
			fmt.Fprintf(w, "  FAIL            left behind on the host:\n      %s\n", escapeJoin(bv.LeftBehind, "\n      "))
		}
		verdict := "holds"
		if bv.Failed > 0 || len(bv.LeftBehind) > 0 {
			verdict = "FAILED"
		}
		left := "nothing left behind"
		if n := len(bv.LeftBehind); n > 0 {
			left = fmt.Sprintf("%d things left behind", n)
		}
		fmt.Fprintf(w, "%s: %s: %d passed, %d failed, %d not applicable, %s, in %.0fs\n\n",
			bv.Name, verdict, bv.Passed, bv.Failed, bv.NotApplied, left, bv.Seconds)
	}
	if len(r.HostGit) > 0 {
		fmt.Fprintln(w, "host git (paddock's own git commands on a sandbox's work, no sandbox needed)")
		writeChecks(w, r.HostGit)
		writeTally(w, "host git", r.HostGit)
	}
	if r.Daemon != nil {
		fmt.Fprintf(w, "daemon (a private daemon's sandbox, on %s)\n", r.Daemon.Backend)
		writeChecks(w, r.Daemon.Checks)
		writeTally(w, "daemon", r.Daemon.Checks)
	}
	for _, s := range r.Skipped {
		fix := ""
		if s.Fix != "" {
			fix = " (fix: " + s.Fix + ")"
		}
		fmt.Fprintf(w, "skipped %s: %s%s\n", s.Name, s.Reason, fix)
	}
}

// writeTally writes the summary line of a group of checks run without a backend's
// sandbox: its verdict and counts.
func writeTally(w io.Writer, group string, checks []conform.Result) {
	passed, failed, notApplied := tally(checks)
	verdict := "holds"
	if failed > 0 {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "%s: %s: %d passed, %d failed, %d not applicable\n\n", group, verdict, passed, failed, notApplied)
}

// tally counts checks by outcome: passed, failed, and the rest (not applicable).
func tally(checks []conform.Result) (passed, failed, notApplied int) {
	for _, c := range checks {
		switch c.Status {
		case conform.Pass:
			passed++
		case conform.Fail:
			failed++
		default:
			notApplied++
		}
	}
	return passed, failed, notApplied
}

// escapeJoin joins what a sandbox may have named (paths left behind), each escaped
// for the terminal.
func escapeJoin(list []string, sep string) string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = termtext.Escape(s)
	}
	return strings.Join(out, sep)
}

// writeChecks writes a line per check, what a failure found or why it did not apply, and
// what the check saw (what it allowed the backend and why, parts not run): the sandbox's
// text among it, escaped.
func writeChecks(w io.Writer, checks []conform.Result) {
	for _, c := range checks {
		fmt.Fprintf(w, "  %-14s  %s\n", c.Status, c.Name)
		if c.Status != conform.Pass && c.Why != "" {
			for _, l := range strings.Split(c.Why, "\n") {
				fmt.Fprintf(w, "      %s\n", termtext.Escape(l))
			}
		}
		for _, n := range c.Notes {
			fmt.Fprintf(w, "      - %s\n", termtext.Escape(firstLine(n)))
		}
	}
}
