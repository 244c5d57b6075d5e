package task

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// maxTitle is the longest pull request title paddock makes, in characters.
const maxTitle = 100

// maxBody keeps a pull request's body under GitHub's limit (65,536 characters).
const maxBody = 60000

// outputTail is how much of a check's output the body shows, in bytes.
const outputTail = 1500

// prTitle is the prompt's first line, cut to maxTitle characters.
func prTitle(prompt string) string {
	title := ""
	for _, line := range strings.Split(prompt, "\n") {
		if title = strings.TrimSpace(line); title != "" {
			break
		}
	}
	if utf8.RuneCountInString(title) > maxTitle {
		r := []rune(title)
		title = strings.TrimSpace(string(r[:maxTitle-1])) + "…"
	}
	return title
}

// prBody is a pull request's description in GitHub's Markdown: the prompt, the
// attempt's checks and their results (the end of their output), its cost, time, diff
// and verdict, and every attempt the task tried, this one marked.
func prBody(t wire.Task, a wire.Attempt, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Opened by paddock for the task `%s`: attempt #%d, %s on %s, ranked %d of %d.\n\n", t.Name, a.N, a.Agent, a.Backend, a.Rank, len(t.Attempts))
	b.WriteString("## Prompt\n\n")
	for _, line := range strings.Split(strings.TrimRight(t.Prompt, "\n"), "\n") {
		b.WriteString(strings.TrimRight("> "+line, " ") + "\n")
	}
	b.WriteString("\n## Checks\n\n")
	if len(t.Checks) == 0 {
		b.WriteString("The task has no checks.\n")
	} else if len(a.Checks) == 0 {
		b.WriteString("The checks have not run on this work.\n")
	} else {
		b.WriteString("| Check | Result | Time |\n|---|---|---|\n")
		for _, c := range a.Checks {
			fmt.Fprintf(&b, "| %s | %s | %.1f s |\n", prCode(c.Command), prCheckResult(c), float64(c.Millis)/1000)
		}
		for _, c := range a.Checks {
			out := prTail(strings.TrimRight(c.Output, "\n"), outputTail)
			if out == "" {
				continue
			}
			fence := prFence(out)
			fmt.Fprintf(&b, "\n<details><summary>%s: the end of its output</summary>\n\n%s\n%s\n%s\n\n</details>\n", prHTML(c.Command), fence, out, fence)
		}
	}
	fmt.Fprintf(&b, "\n**Cost** %s (%d requests) · **time** %s · **diff** %s\n", wire.CostText(&a.Usage), a.Usage.Requests, a.Elapsed(now).Round(time.Second), prDiff(a.Diff))
	if v := a.Verdict; v != nil && v.Error == "" {
		fmt.Fprintf(&b, "\n**Judge** (%s): %d/10. %s\n", v.Judge, v.Score, prLine(v.Reason))
	}
	if a.Why != "" {
		fmt.Fprintf(&b, "\n**Why this attempt**: %s\n", prLine(a.Why))
	}
	b.WriteString("\n## Attempts tried\n\n| # | Agent | State | Checks | Cost | Diff | |\n|---|---|---|---|---|---|---|\n")
	for _, o := range t.Attempts {
		mark := ""
		if o.N == a.N {
			mark = "**this pull request**"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s |\n", o.N, prCell(o.Agent+" on "+o.Backend), prCell(o.State), prPassed(o.Passed), wire.CostText(&o.Usage), prDiff(o.Diff), mark)
	}
	body := b.String()
	if len(body) > maxBody {
		cut := maxBody
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		body = body[:cut] + "\n\n… (cut to GitHub's limit)\n"
	}
	return body
}

func prCheckResult(c wire.CheckResult) string {
	if c.Exit == 0 {
		return "✅ passed"
	}
	return fmt.Sprintf("❌ failed (exit %d)", c.Exit)
}

func prPassed(p *bool) string {
	switch {
	case p == nil:
		return "not run"
	case *p:
		return "✅ pass"
	}
	return "❌ fail"
}

func prDiff(d wire.DiffStat) string {
	return fmt.Sprintf("%d files, +%d −%d", d.Files, d.Insertions, d.Deletions)
}

// prTail is the last n bytes of s, from a line's start when there is one.
func prTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		return "…\n" + s[i+1:]
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return "…" + s
}

// prFence is a code fence longer than any run of backticks in s.
func prFence(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// prCode is s as a Markdown code span in a table cell.
func prCode(s string) string {
	s = prCell(s)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// prCell is s on one line with the table's separators escaped.
func prCell(s string) string {
	return strings.ReplaceAll(prLine(s), "|", `\|`)
}

func prLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// prHTML is s escaped for HTML (a <summary>).
func prHTML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(prLine(s))
}
