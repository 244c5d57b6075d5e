package tui

import (
	"time"

	"charm.land/lipgloss/v2"

	"github.com/paddockhq/paddock/internal/termtext"
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

// runLooks are the looks of runs of paddock's own agent, by their status.
var runLooks = map[string]string{"running": "working", "done": "idle", "failed": "error", "cancelled": "exited",
	"stopped": "exited", "interrupted": "error"}

// runLook is how a run's status is drawn: a session's look, labelled with the run's status.
func runLook(status string) statusLook {
	l := lookOf(runLooks[status])
	l.label = status
	return l
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
	// suspended: stopped with its memory kept; start resumes it.
	"suspended": lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
	"error":     lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
	// lost: its backend has no trace of it; `paddock up NAME` restores its newest snapshot.
	"lost": lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
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

// ageText is termtext.Age.
func ageText(d time.Duration) string { return termtext.Age(d) }
