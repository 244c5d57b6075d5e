package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/gitsrc"
)

// The dialog's fields, in focus order.
const (
	fProject = iota
	fSandbox
	fBackend
	fAgent
	fName
	fWorktree
	fNetwork
	fJustDoIt
	fPrompt
	fCreate
	nFields
)

const newSandbox = "new sandbox"

// dialog is the new-session form.
type dialog struct {
	m       *Model
	focus   int
	project textinput.Model
	name    textinput.Model
	// prompt is the agent's first message, typed in once it is at its prompt ("": none).
	prompt textinput.Model
	// nameEdited is set once the user types a name; the suggestion then stops following.
	nameEdited bool

	sandboxes []string // "new sandbox", then the project's sandboxes
	sandboxI  int
	backends  []wire.BackendReport
	backendI  int
	agents    []wire.AgentReport
	agentI    int
	worktree  bool
	open      bool // network
	justDoIt  bool

	doctor    *wire.Doctor
	doctorErr string
	// inside holds, by "sandbox/agent", why the agent's CLI cannot run in an existing
	// sandbox ("" when it can), as checked in the sandbox itself; checking marks the
	// checks under way.
	inside   map[string]string
	checking map[string]bool
	problem  string // why Create is refused, shown under the form
}

type (
	doctorMsg struct {
		doc wire.Doctor
		err error
	}
	// dialogResultMsg ends a creation started from the dialog.
	insideMsg struct {
		key, reason string
	}
	dialogResultMsg struct {
		id      int
		sandbox string
		name    string
		err     error
	}
)

func (m *Model) openDialog() tea.Cmd {
	d := &dialog{m: m, inside: map[string]string{}, checking: map[string]bool{}}
	d.project = textinput.New()
	d.project.Prompt = ""
	d.project.ShowSuggestions = true
	d.project.SetValue(m.defaultProject())
	d.project.CursorEnd()
	d.name = textinput.New()
	d.name.Prompt = ""
	d.name.CharLimit = 63
	d.prompt = textinput.New()
	d.prompt.Prompt = ""
	d.prompt.Placeholder = "optional: the agent starts working on it at once"
	m.dialog = d
	m.mode = modeDialog
	d.projectChanged()
	daemon, ctx := m.d, m.ctx
	return tea.Batch(d.project.Focus(), func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		doc, err := daemon.Doctor(cctx)
		return doctorMsg{doc, err}
	}, m.spinCmd())
}

// defaultProject is the repository the TUI was started in, else the selected row's
// project, else the directory the TUI was started in.
func (m *Model) defaultProject() string {
	if top, err := gitsrc.Git(context.Background(), m.opts.Cwd, "rev-parse", "--show-toplevel"); err == nil {
		return top
	}
	if r, ok := m.selected(); ok && r.project != "" && !strings.Contains(r.project, "://") {
		return r.project
	}
	return m.opts.Cwd
}

func (d *dialog) update(msg tea.Msg) tea.Cmd {
	if im, ok := msg.(insideMsg); ok {
		d.inside[im.key] = im.reason
		delete(d.checking, im.key)
		d.validate()
		return nil
	}
	if dm, ok := msg.(doctorMsg); ok {
		if dm.err != nil {
			d.doctorErr = "checking backends and agents: " + dm.err.Error()
			return nil
		}
		d.doctor = &dm.doc
		d.backends = dm.doc.Backends
		d.agents = dm.doc.Agents
		for i, b := range d.backends {
			if b.Default {
				d.backendI = i
			}
		}
		for i, a := range d.agents {
			if a.Name == wire.DefaultAgent {
				d.agentI = i
			}
		}
		d.validate()
	}
	return nil
}

func (d *dialog) key(msg tea.KeyPressMsg) tea.Cmd {
	k := msg.String()
	switch k {
	case "esc":
		d.m.mode = modeList
		d.m.dialog = nil
		return nil
	case "down", "tab":
		if k == "tab" && d.focus == fProject && d.completeProject() {
			return nil
		}
		return d.setFocus(d.next(d.focus, 1))
	case "up", "shift+tab":
		return d.setFocus(d.next(d.focus, -1))
	case "ctrl+s":
		return d.submit()
	case "enter":
		if d.focus == fCreate {
			return d.submit()
		}
		return d.setFocus(d.next(d.focus, 1))
	}
	switch d.focus {
	case fProject:
		var cmd tea.Cmd
		before := d.project.Value()
		d.project, cmd = d.project.Update(msg)
		if d.project.Value() != before {
			d.projectChanged()
		}
		return cmd
	case fName:
		var cmd tea.Cmd
		before := d.name.Value()
		d.name, cmd = d.name.Update(msg)
		if d.name.Value() != before {
			d.nameEdited = true
			d.validate()
		}
		return cmd
	case fPrompt:
		var cmd tea.Cmd
		d.prompt, cmd = d.prompt.Update(msg)
		d.validate()
		return cmd
	}
	step := 0
	switch k {
	case "left", "h":
		step = -1
	case "right", "l", "space", " ":
		step = 1
	}
	if step == 0 {
		return nil
	}
	switch d.focus {
	case fSandbox:
		d.sandboxI = cycle(d.sandboxI, step, len(d.sandboxes))
		d.suggestName()
	case fBackend:
		d.backendI = cycle(d.backendI, step, len(d.backends))
	case fAgent:
		d.agentI = cycle(d.agentI, step, len(d.agents))
	case fWorktree:
		d.worktree = !d.worktree
	case fNetwork:
		d.open = !d.open
	case fJustDoIt:
		d.justDoIt = !d.justDoIt
	}
	d.validate()
	return nil
}

func cycle(i, step, n int) int {
	if n == 0 {
		return 0
	}
	return ((i+step)%n + n) % n
}

// next is the next field in direction dir that applies (backend and network only to a
// new sandbox; backend not with "Just do it", which picks it).
func (d *dialog) next(from, dir int) int {
	i := from
	for range nFields {
		i = cycle(i, dir, nFields)
		if d.applies(i) {
			return i
		}
	}
	return from
}

func (d *dialog) applies(f int) bool {
	switch f {
	case fBackend:
		return d.isNew() && !d.justDoIt
	case fNetwork:
		return d.isNew()
	}
	return true
}

func (d *dialog) setFocus(f int) tea.Cmd {
	d.focus = f
	d.project.Blur()
	d.name.Blur()
	d.prompt.Blur()
	switch f {
	case fProject:
		return d.project.Focus()
	case fName:
		return d.name.Focus()
	case fPrompt:
		return d.prompt.Focus()
	}
	return nil
}

func (d *dialog) isNew() bool { return d.sandboxI == 0 }

func (m *Model) dialogResult(msg dialogResultMsg) (tea.Model, tea.Cmd) {
	delete(m.busy, msg.id)
	if msg.err != nil {
		m.errLine = msg.err.Error()
		return m, m.refreshSandbox(msg.sandbox)
	}
	m.infoLine = fmt.Sprintf("started %s/%s: enter attaches", msg.sandbox, msg.name)
	m.selKey = "s:" + msg.sandbox + "/" + msg.name
	return m, m.refreshSandbox(msg.sandbox)
}

func (d *dialog) view(w, h int) string {
	p, ok := d.validate()
	label := func(f int, text string) string {
		s := fmt.Sprintf("%-13s", text)
		if d.focus == f {
			return styleKey.Render("▸ " + s)
		}
		return "  " + s
	}
	choice := func(f int, val string) string {
		if d.focus == f {
			return "◂ " + styleTitle.Render(val) + " ▸"
		}
		return val
	}
	check := func(on bool) string {
		if on {
			return "[x]"
		}
		return "[ ]"
	}
	var lines []string
	lines = append(lines, styleTitle.Render("New session"), "")
	lines = append(lines, label(fProject, "project")+d.project.View())
	lines = append(lines, label(fSandbox, "sandbox")+choice(fSandbox, d.sandboxes[d.sandboxI]))
	if d.isNew() {
		backend := "…"
		switch {
		case d.justDoIt && p.backend != "":
			backend = styleDim.Render(backendText(p.backend, p.runtime) + " (chosen by Just do it)")
		case len(d.backends) > 0:
			b := d.backends[d.backendI]
			backend = b.Name
			if !b.Available {
				backend += " (not available)"
			}
			backend = choice(fBackend, backend)
		}
		lines = append(lines, label(fBackend, "backend")+backend)
	}
	agent := "…"
	if len(d.agents) > 0 {
		a := d.agents[d.agentI]
		agent = a.Name
		if !a.Available {
			agent += " (not installed on the host)"
		}
		agent = choice(fAgent, agent)
	}
	lines = append(lines, label(fAgent, "agent")+agent)
	lines = append(lines, label(fName, "session name")+d.name.View())
	lines = append(lines, label(fWorktree, "worktree")+check(d.worktree)+" its own worktree and branch, named after the session")
	if d.isNew() {
		net := "closed (loopback; HTTP(S) through the allowlist proxy)"
		if d.open {
			net = "open (the backend's normal network)"
		}
		lines = append(lines, label(fNetwork, "network")+choice(fNetwork, net))
	}
	lines = append(lines, label(fJustDoIt, "Just do it")+check(d.justDoIt)+" strongest isolation here, every permission, the agent told its machine is disposable")
	// The choice and its warning, wrapped under the field to the box's width.
	note := func(style lipgloss.Style, text string) {
		for _, l := range strings.Split(ansi.Wrap(text, max(20, min(w-2, 110)-4-15), " "), "\n") {
			lines = append(lines, "               "+style.Render(l))
		}
	}
	if d.justDoIt && p.why != "" {
		note(styleDim, p.why)
	}
	if d.justDoIt && p.warn != "" && p.backend != "" {
		note(styleTool, "! "+p.warn)
	}
	if d.justDoIt && p.agent != "" && !p.disposable {
		lines = append(lines, "               "+styleDim.Render(p.agent+" reads no memory file: it is not told its machine is disposable"))
	}
	lines = append(lines, label(fPrompt, "first prompt")+d.prompt.View())
	lines = append(lines, "")
	button := "[ Create ]"
	if d.focus == fCreate {
		button = styleSelected.Render(button)
	}
	lines = append(lines, "  "+button)
	lines = append(lines, "")
	if !ok {
		text := d.problem
		if d.doctor == nil && d.doctorErr == "" {
			text = d.m.spin.View() + " " + text
			lines = append(lines, styleDim.Render(text))
		} else {
			lines = append(lines, styleError.Render("✕ "+text))
		}
	} else {
		what := fmt.Sprintf("will start %s in %s/%s", p.agent, p.sandbox, p.name)
		if p.isNew {
			what = fmt.Sprintf("will create sandbox %s on %s, then start %s in %s/%s", p.sandbox, backendText(p.backend, p.runtime), p.agent, p.sandbox, p.name)
		}
		if p.prompt != "" {
			what += ", at work on its first prompt"
		}
		lines = append(lines, styleInfo.Render(what))
	}
	lines = append(lines, "", styleDim.Render("↑/↓ tab field · ←/→ space change · tab completes the path · enter next · ctrl+s create · esc cancel"))
	box := styleBox.Width(min(w-2, 110)).Render(strings.Join(lines, "\n"))
	return lipgloss.Place(w, max(1, h-1), lipgloss.Center, lipgloss.Center, box)
}

// checkInside asks the selected existing sandbox whether the selected agent's CLI is on
// its PATH (the daemon refuses a session otherwise), unless that is known or being asked.
func (d *dialog) checkInside() tea.Cmd {
	if d.isNew() || len(d.agents) == 0 || d.sandboxI >= len(d.sandboxes) {
		return nil
	}
	a := d.agents[d.agentI]
	sb, agent := d.sandboxes[d.sandboxI], a.Name
	key := sb + "/" + agent
	if _, known := d.inside[key]; known || d.checking[key] || d.m.sandboxes[sb].State != "running" {
		return nil
	}
	bin := a.Binary
	if bin == "" { // a daemon older than the doctor's report of it: the command is the agent's name
		bin = a.Name
	}
	d.checking[key] = true
	ctx, daemon := d.m.ctx, d.m.d
	return func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		code, err := daemon.Exec(cctx, sb, wire.ExecRequest{Argv: []string{"sh", "-c", `command -v "$1" >/dev/null`, "sh", bin}}, wire.ExecIO{})
		switch {
		case err != nil:
			return insideMsg{key, fmt.Sprintf("checking %s in %s: %v", agent, sb, err)}
		case code != 0:
			return insideMsg{key, fmt.Sprintf("agent %s is not installed in %s (no %q on its PATH)", agent, sb, bin)}
		}
		return insideMsg{key, ""}
	}
}
