package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/lscmd"
	"github.com/paddockhq/paddock/internal/termtext"
)

// View draws the screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "paddock"
	return v
}

func (m *Model) listWidth() int {
	if m.width < 90 {
		return m.width
	}
	return m.width * 55 / 100
}

// listHeight is how many rows fit between the title line and the two bottom lines.
func (m *Model) listHeight() int { return max(1, m.height-3) }

func (m *Model) render() string {
	if m.timeline != nil && (m.mode == modeTimeline || m.mode == modeForkName || m.mode == modeConfirm) {
		return m.renderTimeline()
	}
	if m.tasks != nil && (m.mode == modeTasks || m.mode == modeReview || m.mode == modeConfirm) {
		return m.renderTasks()
	}
	switch m.mode {
	case modeHelp:
		return m.renderHelp()
	case modePager:
		keys := "↑/↓ pgup/pgdn scroll · q back"
		if m.pagerApply != nil {
			keys = "↑/↓ pgup/pgdn scroll · a apply · q back"
		}
		return styleTitle.Render(m.title) + "  " + styleDim.Render(keys) + "\n" + m.pager.View()
	case modeDialog:
		if m.dialog != nil {
			return m.dialog.view(m.width, m.height) + "\n" + m.statusLine()
		}
	}
	return m.header() + "\n" + m.listAndSide(m.renderList, m.renderPreview) + "\n" + m.statusLine() + "\n" + m.footer()
}

// listAndSide is a screen's body: list at the left and, when the terminal is wider than
// the list, a rule and side at its right, each given its width and height.
func (m *Model) listAndSide(list, side func(w, h int) string) string {
	h := m.listHeight()
	lw := m.listWidth()
	l := list(lw, h)
	if lw >= m.width {
		return l
	}
	pw := m.width - lw - 1
	sep := strings.TrimSuffix(strings.Repeat("│\n", h), "\n")
	return lipgloss.JoinHorizontal(lipgloss.Top, l, styleDim.Render(sep), side(pw, h))
}

func (m *Model) header() string {
	nsb, nse, waiting := len(m.sandboxes), 0, 0
	for _, ss := range m.sessions {
		nse += len(ss)
		for _, s := range ss {
			if s.Status == "waiting" {
				waiting++
			}
		}
	}
	text := styleTitle.Render("paddock") + styleDim.Render("  "+plural(nsb, "sandbox", "sandboxes")+" · "+plural(nse, "session", "sessions"))
	if waiting > 0 {
		text += "  " + lookOf("waiting").style.Render(fmt.Sprintf("%d waiting for you", waiting))
	}
	if f := m.filter.Value(); f != "" && m.mode != modeFilter {
		text += styleDim.Render("  filter: ") + f
	}
	return ansi.Truncate(text, m.width, "…")
}

func (m *Model) renderList(w, h int) string {
	if !m.loaded {
		return pad(m.spin.View()+" reading sandboxes…", w, h)
	}
	if len(m.rows) == 0 {
		text := "No sandboxes yet. Press n to start a session (or run `paddock up` in a project)."
		if m.filter.Value() != "" {
			text = "Nothing matches the filter (esc clears it)."
		}
		return pad(text, w, h)
	}
	return renderWindow(len(m.rows), m.cursor, &m.top, w, h, func(i int) string { return m.renderRow(m.rows[i], w) })
}

// renderWindow renders the n rows of a list that fit in h lines from *top, moving *top
// so that the cursor's row shows, and highlights the cursor's; line renders row i.
func renderWindow(n, cursor int, top *int, w, h int, line func(i int) string) string {
	if cursor < *top {
		*top = cursor
	}
	if cursor >= *top+h {
		*top = cursor - h + 1
	}
	*top = max(0, min(*top, n-h))
	var b strings.Builder
	for i := *top; i < n && i < *top+h; i++ {
		l := line(i)
		if i == cursor {
			l = styleSelected.Render(ansi.Strip(l))
		}
		b.WriteString(l)
		if i < *top+h-1 {
			b.WriteByte('\n')
		}
	}
	return pad(b.String(), w, h)
}

func (m *Model) renderRow(r row, w int) string {
	var line string
	switch r.kind {
	case rowProject:
		mark := "▾"
		if m.collapsed[r.project] {
			mark = "▸"
		}
		line = styleProject.Render(mark+" "+projectTitle(r.project)) + styleDim.Render(fmt.Sprintf("  (%d)", r.count))
	case rowSandbox:
		sb := m.sandboxes[r.sandbox]
		st, ok := sandboxStateStyle[sb.State]
		if !ok {
			st = lipgloss.NewStyle()
		}
		extra := sb.Backend
		if sb.Runtime != "" {
			extra += "/" + sb.Runtime
		}
		if sb.Network == "open" {
			extra += " · network open"
		}
		if sb.Usage != nil && sb.Usage.Requests > 0 {
			extra += " · " + wire.CostText(sb.Usage)
		}
		line = "  " + styleTitle.Render(r.sandbox) + " " + st.Render(sb.State)
		if sb.Alarms > 0 { // its agent went for its own controls: paddock alarms NAME
			line += " " + styleError.Render(lscmd.AlarmMark+" ALARM")
		}
		line += styleDim.Render("  " + extra)
	case rowSession:
		se, _ := m.sessionInfo(r.sandbox, r.session)
		look := lookOf(se.Status)
		key := r.sandbox + "/" + r.session
		at := se.LastActivity
		if ev := m.activity[key]; ev.After(at) {
			at = ev
		}
		age := ""
		if !at.IsZero() {
			age = ageText(m.now().Sub(at))
		}
		last := m.said[key]
		if se.Status == "exited" || last == "" {
			if note := m.note[key]; note != "" && se.Status == "exited" {
				last = note
			} else if last == "" {
				last = se.Detail
			}
		}
		last = termtext.Escape(strings.ReplaceAll(last, "\n", " "))
		head := fmt.Sprintf("    %s %-18s %-7s %s", look.style.Render(look.symbol), ansi.Truncate(r.session, 18, "…"), se.Agent, look.style.Render(fmt.Sprintf("%-15s", look.label)))
		tail := fmt.Sprintf(" %4s  ", age)
		room := w - ansi.StringWidth(head) - ansi.StringWidth(tail)
		line = head + styleDim.Render(tail+ansi.Truncate(last, max(0, room), "…"))
	case rowRun:
		run, _ := m.runInfo(r.sandbox, r.run)
		look := runLook(run.Status)
		head := fmt.Sprintf("    %s %-18s %-7s %s", look.style.Render(look.symbol), "run "+run.ID, "paddock", look.style.Render(fmt.Sprintf("%-15s", look.label)))
		tail := fmt.Sprintf(" %4s  ", ageText(m.now().Sub(run.Updated)))
		room := w - ansi.StringWidth(head) - ansi.StringWidth(tail)
		text := fmt.Sprintf("%s (%d tool calls)", termtext.Escape(run.Title), run.ToolCalls)
		line = head + styleDim.Render(tail+ansi.Truncate(text, max(0, room), "…"))
	}
	return ansi.Truncate(line, w, "…")
}

// runPreview shows a run: its status and cost, then its latest steps, newest at the bottom.
func (m *Model) runPreview(r row, w, h int) []string {
	run, _ := m.runInfo(r.sandbox, r.run)
	look := runLook(run.Status)
	lines := []string{styleTitle.Render(r.sandbox+" run "+run.ID) + "  " + look.style.Render(look.symbol+" "+look.label),
		styleDim.Render(fmt.Sprintf("%s · %d turns · %d tool calls · %d tokens in, %d out", run.Model, run.Turns, run.ToolCalls,
			run.InputTokens+run.CacheReadTokens+run.CacheWriteTokens, run.OutputTokens))}
	if run.Error != "" {
		lines = append(lines, strings.Split(ansi.Wrap(termtext.Escape(run.Error), w, " "), "\n")...)
	}
	lines = append(lines, "")
	d := m.runDetail
	if d == nil || d.ID != run.ID {
		return append(lines, styleDim.Render("(reading its steps)"))
	}
	var body []string
	for _, st := range d.Steps {
		switch st.Kind {
		case "prompt":
			body = append(body, stylePrompt.Render("> ")+termtext.Escape(firstOf(st.Input)))
		case "turn":
			if t := strings.TrimSpace(st.Output); t != "" {
				body = append(body, styleAssist.Render(termtext.Escape(firstOf(t))))
			}
		case "tool":
			mark := "✓"
			if st.IsError {
				mark = "✗"
			}
			body = append(body, styleTool.Render(mark+" "+st.Name+" ")+termtext.Escape(firstOf(st.Input)))
			out := strings.Split(strings.TrimRight(termtext.Escape(st.Output), "\n"), "\n")
			if len(out) > 3 {
				out = out[len(out)-3:]
			}
			for _, l := range out {
				body = append(body, styleDim.Render("  "+l))
			}
		}
	}
	if room := h - len(lines) - 1; len(body) > room && room > 0 {
		body = body[len(body)-room:]
	}
	for i := range body {
		body[i] = ansi.Truncate(body[i], w, "…")
	}
	return append(lines, body...)
}

// firstOf is the first line of s.
func firstOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// renderPreview shows the selected session's latest exchanges, newest at the bottom.
func (m *Model) renderPreview(w, h int) string {
	r, ok := m.selected()
	var lines []string
	switch {
	case !ok:
	case r.kind == rowRun:
		lines = m.runPreview(r, w, h)
	case r.kind != rowSession:
		sb := m.sandboxes[r.sandbox]
		if r.kind == rowProject {
			lines = append(lines, styleTitle.Render(projectTitle(r.project)), "", "enter or space folds it")
			break
		}
		lines = append(lines, styleTitle.Render(sb.Name), "backend  "+sb.Backend, "state    "+sb.State, "network  "+sb.Network,
			"sync     "+sb.SyncMode, "project  "+projectOf(sb), "cost     "+usageText(sb.Usage))
		if sb.Detail != "" {
			lines = append(lines, "", termtext.Escape(sb.Detail))
		}
	default:
		se, _ := m.sessionInfo(r.sandbox, r.session)
		look := lookOf(se.Status)
		lines = append(lines, styleTitle.Render(r.sandbox+"/"+r.session)+"  "+look.style.Render(look.symbol+" "+look.label))
		if se.Usage != nil && se.Usage.Requests > 0 {
			lines = append(lines, styleDim.Render("cost "+usageText(se.Usage)))
		}
		lines = append(lines, "")
		switch {
		case len(m.preview) == 0 && strings.TrimSpace(m.screen) != "":
			lines = append(lines, styleDim.Render("its screen:"))
			screen := strings.Split(strings.TrimRight(termtext.Escape(m.screen), "\n "), "\n")
			if len(screen) > h-3 {
				screen = screen[len(screen)-(h-3):]
			}
			lines = append(lines, screen...)
		case m.previewErr != "":
			for _, l := range strings.Split(ansi.Wrap(termtext.Escape(m.previewErr), w, " "), "\n") {
				lines = append(lines, styleDim.Render(l))
			}
		case len(m.preview) == 0:
			lines = append(lines, styleDim.Render("(no conversation yet)"))
		default:
			lines = append(lines, conversation(m.preview, w, h-2)...)
		}
	}
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "…")
	}
	if len(lines) > h {
		lines = lines[:h]
	}
	return pad(strings.Join(lines, "\n"), w, h)
}

// conversation renders the last entries that fit in h lines of width w.
func conversation(entries []wire.TranscriptEntry, w, h int) []string {
	var out []string
	for i := len(entries) - 1; i >= 0 && len(out) < h; i-- {
		e := entries[i]
		var label, text string
		var st lipgloss.Style
		switch e.Kind {
		case wire.EntryUser:
			label, text, st = "you", e.Text, stylePrompt
		case wire.EntryAssistant:
			label, text, st = "agent", e.Text, styleAssist
		case wire.EntryToolCall:
			label, text, st = "tool", e.Tool+" "+e.InputText(), styleTool
		case wire.EntryToolResult:
			label, text, st = "  ⎿", e.Output, styleDim
		case wire.EntryFileChange:
			label, text, st = "file", e.Path, styleTool
		default:
			continue
		}
		text = termtext.Escape(strings.TrimSpace(text))
		wrapped := strings.Split(ansi.Wrap(text, max(10, w-7), ""), "\n")
		if e.Kind == wire.EntryToolResult || e.Kind == wire.EntryToolCall {
			wrapped = wrapped[:min(len(wrapped), 3)]
		}
		block := make([]string, 0, len(wrapped))
		for j, l := range wrapped {
			prefix := "      "
			if j == 0 {
				prefix = fmt.Sprintf("%-5s ", label)
			}
			block = append(block, st.Render(prefix+l))
		}
		out = append(block, out...)
	}
	if len(out) > h {
		out = out[len(out)-h:]
	}
	return out
}

func (m *Model) statusLine() string {
	var parts []string
	for _, what := range m.busy {
		parts = append(parts, m.spin.View()+" "+what+"…")
		break
	}
	if n := len(m.busy); n > 1 {
		parts = append(parts, styleDim.Render(fmt.Sprintf("(+%d)", n-1)))
	}
	switch {
	case m.mode == modeFilter:
		parts = append(parts, m.filter.View())
	case m.mode == modeMessage, m.mode == modeReview, m.mode == modeForkName:
		parts = append(parts, m.input.View())
	case m.mode == modeConfirm:
		parts = append(parts, styleError.Render(m.confirm.text))
	case m.errLine != "":
		parts = append(parts, styleError.Render("✕ "+termtext.Escape(m.errLine)))
	case m.infoLine != "":
		parts = append(parts, styleInfo.Render(termtext.Escape(m.infoLine)))
	}
	return ansi.Truncate(strings.Join(parts, " "), m.width, "…")
}

func (m *Model) footer() string {
	return ansi.Truncate(styleDim.Render(footerKeys), m.width, "…")
}

func (m *Model) renderHelp() string {
	var b strings.Builder
	b.WriteString(styleTitle.Render("paddock: keys") + "\n\n")
	for _, kv := range keyHelp {
		fmt.Fprintf(&b, "  %s  %s\n", styleKey.Render(fmt.Sprintf("%-10s", kv[0])), kv[1])
	}
	b.WriteString("\n  Status: ")
	for _, st := range []string{"working", "waiting", "idle", "running", "starting", "exited", "error"} {
		l := lookOf(st)
		b.WriteString(l.style.Render(l.symbol+" "+l.label) + "   ")
	}
	b.WriteString("\n\n" + styleDim.Render("  any key closes this help"))
	return b.String()
}

// pad makes s exactly h lines of width w, so the panes line up and stale text is erased.
func pad(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	for i, l := range lines {
		lw := ansi.StringWidth(l)
		if lw > w {
			l = ansi.Truncate(l, w, "")
			lw = ansi.StringWidth(l)
		}
		lines[i] = l + strings.Repeat(" ", w-lw)
	}
	return strings.Join(lines, "\n")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// usageText is what model calls cost, an estimate, with the tokens behind it.
func usageText(u *wire.UsageSum) string {
	if u == nil || u.Requests == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (estimate; %d calls, %d tokens in, %d out)", wire.CostText(u), u.Requests,
		u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, u.OutputTokens)
}
