package tui

import (
	"fmt"
	"time"

	"charm.land/lipgloss/v2"
)

// statusLook is how a status is drawn: a symbol that tells statuses apart without colour,
// and a colour that tells them apart at a glance.
type statusLook struct {
	symbol string
	label  string
	style  lipgloss.Style
}

var statusLooks = map[string]statusLook{
	"working":  {"●", "working", lipgloss.NewStyle().Foreground(lipgloss.Color("3")).Bold(true)},
	"waiting":  {"◆", "waiting for you", lipgloss.NewStyle().Foreground(lipgloss.Color("13")).Bold(true)},
	"idle":     {"○", "idle", lipgloss.NewStyle().Foreground(lipgloss.Color("2"))},
	"running":  {"▸", "running", lipgloss.NewStyle().Foreground(lipgloss.Color("4"))},
	"starting": {"◌", "starting", lipgloss.NewStyle().Foreground(lipgloss.Color("6"))},
	"exited":   {"✕", "exited", lipgloss.NewStyle().Foreground(lipgloss.Color("8"))},
	"error":    {"!", "error", lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)},
}

func lookOf(status string) statusLook {
	if l, ok := statusLooks[status]; ok {
		return l
	}
	return statusLook{"?", status, lipgloss.NewStyle()}
}

var sandboxStateStyle = map[string]lipgloss.Style{
	"running": lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
	"stopped": lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
	"error":   lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
}

var (
	styleTitle    = lipgloss.NewStyle().Bold(true)
	styleProject  = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	styleDim      = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	styleSelected = lipgloss.NewStyle().Reverse(true)
	styleError    = lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
	styleInfo     = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	styleKey      = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6"))
	styleBox      = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1)
	stylePrompt   = lipgloss.NewStyle().Foreground(lipgloss.Color("12")).Bold(true)
	styleAssist   = lipgloss.NewStyle().Foreground(lipgloss.Color("7"))
	styleTool     = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
)

// ageText is a short age: 5s, 3m, 2h, 4d.
func ageText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
