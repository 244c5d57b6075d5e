package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/paddockhq/paddock/internal/termtext"
)

// mergePlan is what `paddock merge --check --json` says of a merge (gitsync.MergePlan).
type mergePlan struct {
	Branch      string   `json:"branch"`
	Ref         string   `json:"ref"`
	Commit      string   `json:"commit"`
	Into        string   `json:"into"`
	Commits     []string `json:"commits"`
	Files       []string `json:"files"`
	FastForward bool     `json:"fast_forward"`
	RunsOnHost  []struct {
		Path string `json:"path"`
		Why  string `json:"why"`
	} `json:"runs_on_host"`
	Uncommitted bool `json:"uncommitted"`
}

// askMerge plans a merge of the sandbox's branch into the host repository's current
// branch (`paddock merge SANDBOX --check`, which syncs first) and asks before running it,
// naming the files that run code on the host once merged; a yes runs `paddock merge
// SANDBOX --yes`, its output in the pager. The CLI holds the policy: the TUI only asks.
func (m *Model) askMerge(sb string) tea.Cmd {
	if sb == "" {
		return nil
	}
	command := m.opts.Command
	return m.call("planning the merge of "+sb, func(ctx context.Context) doneMsg {
		cmd := command(ctx, "merge", sb, "--check", "--json")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &errOut, nil
		if err := cmd.Run(); err != nil {
			text := termtext.Escape(errOut.String())
			return doneMsg{err: fmt.Errorf("paddock merge %s: %v", sb, firstLine(text, err)), title: "merge " + sb, pager: text, refresh: []string{sb}}
		}
		var p mergePlan
		if err := json.Unmarshal(out.Bytes(), &p); err != nil {
			return doneMsg{err: fmt.Errorf("paddock merge %s --check: %w", sb, err)}
		}
		if len(p.Commits) == 0 {
			info := fmt.Sprintf("%s already has everything on %s's %s: nothing to merge", p.Into, sb, termtext.Escape(p.Branch))
			if p.Uncommitted {
				info += " (its uncommitted work is not merged: paddock merge --wip)"
			}
			return doneMsg{info: info, refresh: []string{sb}}
		}
		return doneMsg{info: "merge of " + sb + " planned", refresh: []string{sb}, ask: &confirmation{
			text: mergeQuestion(sb, p),
			action: func() tea.Cmd {
				// Flags first, then --: the branch is the sandbox's to name, and never read as a flag.
				return m.runCLI("merging "+sb, "merge "+sb, sb, "merge", "--commit", p.Commit, "--yes", "--", sb, p.Branch)
			},
		}}
	})
}

// mergeQuestion asks whether to merge as planned.
func mergeQuestion(sb string, p mergePlan) string {
	how := "merge commit"
	if p.FastForward {
		how = "fast-forward"
	}
	q := fmt.Sprintf("Merge %s's %s into %s (%s, %d commit(s), %d file(s))?", sb, termtext.Escape(p.Branch), p.Into, how, len(p.Commits), len(p.Files))
	if len(p.RunsOnHost) > 0 {
		var files []string
		for _, h := range p.RunsOnHost {
			files = append(files, fmt.Sprintf("%s (%s)", termtext.Escape(h.Path), h.Why))
		}
		q += " WARNING: it changes files that run code on this machine once merged: " + strings.Join(files, ", ") + "; read them first (git show " + termtext.Escape(p.Ref) + ")."
	}
	if p.Uncommitted {
		q += " Uncommitted work in the sandbox is not merged."
	}
	return q + " [y/N]"
}
