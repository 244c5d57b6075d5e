package tui

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/paddockhq/paddock/internal/termtext"
)

// proposeAllowlist shows the allowlist the sandbox's learn mode proposes (`paddock net
// propose SANDBOX`: its rules with what each allowed, and + before those to add) in the
// pager, where a applies it (`--apply`); a sandbox that never learned is asked whether
// to start (`paddock net learn SANDBOX`). The daemon holds the policy: the TUI shows it.
func (m *Model) proposeAllowlist(sb string) tea.Cmd {
	if sb == "" {
		return nil
	}
	command := m.opts.Command
	return m.call("reading the allowlist proposed for "+sb, func(ctx context.Context) doneMsg {
		cmd := command(ctx, "net", "propose", sb)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &errOut, nil
		err := cmd.Run()
		if err != nil {
			text := termtext.Escape(errOut.String())
			if strings.Contains(text, "has not been in learn mode") {
				return doneMsg{ask: &confirmation{
					text: fmt.Sprintf("%s has not learned its allowlist: record what it reaches for during the next hour (nothing new is allowed meanwhile)? [y/N]", sb),
					action: func() tea.Cmd {
						return m.runCLI("starting learn mode of "+sb, "learn mode of "+sb, sb, "net", "learn", sb)
					},
				}}
			}
			return doneMsg{err: fmt.Errorf("paddock net propose %s: %v", sb, firstLine(text, err)), title: "allowlist of " + sb, pager: text}
		}
		// The summary first, then the diff, then what to do.
		notes := strings.SplitAfterN(errOut.String(), "\n", 2)
		text := notes[0] + "\n" + out.String()
		if len(notes) > 1 {
			text += "\n" + notes[1]
		}
		d := doneMsg{info: "allowlist proposed for " + sb, title: "allowlist proposed for " + sb, pager: termtext.Escape(text)}
		if strings.HasPrefix(out.String(), "+ ") || strings.Contains(out.String(), "\n+ ") {
			d.apply = &confirmation{text: "a apply", action: func() tea.Cmd {
				return m.runCLI("applying the allowlist proposed for "+sb, "allowlist of "+sb, sb, "net", "propose", sb, "--apply")
			}}
		}
		return d
	})
}
