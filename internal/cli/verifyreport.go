package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/paddockhq/paddock/internal/backend/conform"
)

// writeVerify writes verify's report for people: per backend its tier and versions, a
// line per check, what was left behind and a summary line; then the backends skipped.
func writeVerify(w io.Writer, r verifyReport) {
	for _, bv := range r.Backends {
		fmt.Fprintf(w, "%s (isolation: %s)\n", bv.Name, bv.Isolation)
		var vs []string
		for k, v := range bv.Versions {
			vs = append(vs, k+" "+v)
		}
		slices.Sort(vs)
		fmt.Fprintf(w, "  versions: %s\n", strings.Join(vs, ", "))
		for _, c := range bv.Checks {
			fmt.Fprintf(w, "  %-14s  %s\n", c.Status, c.Name)
			if c.Status != conform.Pass && c.Why != "" {
				for _, l := range strings.Split(c.Why, "\n") {
					fmt.Fprintf(w, "      %s\n", l)
				}
			}
			// What the check saw: what it allowed this backend and why, parts not run.
			for _, n := range c.Notes {
				fmt.Fprintf(w, "      - %s\n", firstLine(n))
			}
		}
		if len(bv.LeftBehind) > 0 {
			fmt.Fprintf(w, "  FAIL            left behind on the host:\n      %s\n", strings.Join(bv.LeftBehind, "\n      "))
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
	for _, s := range r.Skipped {
		fix := ""
		if s.Fix != "" {
			fix = " (fix: " + s.Fix + ")"
		}
		fmt.Fprintf(w, "skipped %s: %s%s\n", s.Name, s.Reason, fix)
	}
}
