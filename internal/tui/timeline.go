package tui

// The timeline (t on a session): the session's checkpoints, one a line, oldest at the
// top (turn, age, files, lines added and deleted, the turn's prompt), the selected one's
// diff beside them (its stat, then the diff); r rewinds the session's files and
// conversation to the selected checkpoint after a yes, f forks a new sandbox from it,
// enter shows its whole diff. Read again on the sandbox's checkpoint events.

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

// timelineView is the timeline's state; the Model holds one while it is open.
type timelineView struct {
	sandbox, session string
	cps              []wire.Checkpoint
	err              string
	loaded           bool
	cursor           int
	// selSeq is the selected checkpoint's Seq, kept across readings.
	selSeq int
	top    int
	// diffs are the checkpoints' diffs read so far, by Seq.
	diffs map[int]*cpDiff
	// forkFrom is the checkpoint a fork being named starts from.
	forkFrom wire.Checkpoint
}

// cpDiff is what a checkpoint changed: its stat and its diff, escaped for the terminal.
type cpDiff struct {
	stat, diff string
	err        string
	// statHead and head are the stat's and the diff's first lines, all the preview can show.
	statHead, head []string
	done           bool
}

// diffHead is how many of a diff's lines the preview keeps: more than any pane's height.
const diffHead = 300

// Messages of the timeline.
type (
	checkpointsMsg struct {
		sandbox, session string
		cps              []wire.Checkpoint
		err              error
	}
	cpDiffMsg struct {
		sandbox, session string
		seq              int
		stat, diff       string
		err              error
	}
)

const timelineKeys = "↑/↓ move · enter whole diff · r rewind to it · f fork from it · esc back"

// openTimeline opens the selected session's timeline.
func (m *Model) openTimeline(r row) tea.Cmd {
	if r.kind != rowSession {
		m.errLine = "select a session to see its turns"
		return nil
	}
	m.timeline = &timelineView{sandbox: r.sandbox, session: r.session, diffs: map[int]*cpDiff{}}
	m.mode = modeTimeline
	m.errLine, m.infoLine = "", ""
	return m.loadCheckpoints()
}

// loadCheckpoints reads the open timeline's checkpoints.
func (m *Model) loadCheckpoints() tea.Cmd {
	v := m.timeline
	if v == nil {
		return nil
	}
	ctx, d, sb, name := m.ctx, m.d, v.sandbox, v.session
	return func() tea.Msg {
		cps, err := d.Checkpoints(ctx, sb, name)
		return checkpointsMsg{sandbox: sb, session: name, cps: cps, err: err}
	}
}

// loadDiff reads what the selected checkpoint changed, unless it was read already.
func (m *Model) loadDiff() tea.Cmd {
	v := m.timeline
	cp := v.selected()
	if cp == nil || v.diffs[cp.Seq] != nil {
		return nil
	}
	v.diffs[cp.Seq] = &cpDiff{}
	ctx, d, sb, name, seq := m.ctx, m.d, v.sandbox, v.session, cp.Seq
	return func() tea.Msg {
		// From the checkpoint before it (of any session), as its files and lines count.
		msg := cpDiffMsg{sandbox: sb, session: name, seq: seq}
		to := fmt.Sprintf("#%d", seq)
		msg.stat, msg.err = d.CheckpointDiff(ctx, sb, name, "", to, true)
		if msg.err == nil {
			msg.diff, msg.err = d.CheckpointDiff(ctx, sb, name, "", to, false)
		}
		return msg
	}
}

// timelineUpdate handles the timeline's messages; ok is false for any other.
func (m *Model) timelineUpdate(msg tea.Msg) (tea.Cmd, bool) {
	v := m.timeline
	switch msg := msg.(type) {
	case checkpointsMsg:
		if v == nil || msg.sandbox != v.sandbox || msg.session != v.session {
			return nil, true
		}
		first := !v.loaded
		v.loaded, v.err = true, ""
		if msg.err != nil {
			v.err = msg.err.Error()
			return nil, true
		}
		v.cps = msg.cps
		v.cursor = len(v.cps) - 1 // the newest, at first and when the selection went
		for i, cp := range v.cps {
			if cp.Seq == v.selSeq && !first {
				v.cursor = i
			}
		}
		v.cursor = max(0, v.cursor)
		if cp := v.selected(); cp != nil {
			v.selSeq = cp.Seq
		}
		return m.loadDiff(), true
	case cpDiffMsg:
		if v == nil || msg.sandbox != v.sandbox || msg.session != v.session {
			return nil, true
		}
		dt := &cpDiff{stat: termtext.Escape(msg.stat), diff: termtext.Escape(msg.diff), done: true}
		dt.statHead, dt.head = headLines(dt.stat), headLines(dt.diff)
		if msg.err != nil {
			dt.err = msg.err.Error()
		}
		v.diffs[msg.seq] = dt
		return nil, true
	}
	return nil, false
}

// headLines is text's first diffHead lines.
func headLines(text string) []string {
	var out []string
	for rest := strings.TrimRight(text, "\n"); rest != "" && len(out) < diffHead; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		out = append(out, line)
	}
	return out
}

// timelineEvents reads the checkpoints again when the timeline's sandbox took one, or
// one of its sessions was rewound (from the CLI, or another screen).
func (m *Model) timelineEvents(evs []wire.Event) tea.Cmd {
	if m.timeline == nil {
		return nil
	}
	for _, ev := range evs {
		if ev.Sandbox == m.timeline.sandbox && (ev.Kind == "checkpoint" || ev.Kind == "rewind") {
			return m.loadCheckpoints()
		}
	}
	return nil
}

func (v *timelineView) selected() *wire.Checkpoint {
	if v.cursor < 0 || v.cursor >= len(v.cps) {
		return nil
	}
	return &v.cps[v.cursor]
}

// current is the Seq of the checkpoint the session stands at: the newest, or, when the
// newest is a rewind's undo point, the checkpoint that rewind went to.
func (v *timelineView) current() int {
	if len(v.cps) == 0 {
		return 0
	}
	last := v.cps[len(v.cps)-1]
	if last.Kind == wire.CheckpointRewind && last.RewoundTo > 0 {
		return last.RewoundTo
	}
	return last.Seq
}

// timelineKey handles a key in the timeline.
func (m *Model) timelineKey(k string) tea.Cmd {
	v := m.timeline
	move := func(delta int) tea.Cmd {
		if len(v.cps) == 0 {
			return nil
		}
		v.cursor = max(0, min(len(v.cps)-1, v.cursor+delta))
		v.selSeq = v.cps[v.cursor].Seq
		return m.loadDiff()
	}
	switch k {
	case "esc", "q", "t":
		m.timeline, m.mode = nil, modeList
		m.errLine, m.infoLine = "", ""
		return nil
	case "up", "k":
		return move(-1)
	case "down", "j":
		return move(1)
	case "pgup":
		return move(-m.listHeight())
	case "pgdown":
		return move(m.listHeight())
	case "home", "g":
		return move(-len(v.cps))
	case "end", "G":
		return move(len(v.cps))
	case "?":
		m.mode = modeHelp
		return nil
	}
	cp := v.selected()
	if cp == nil {
		return nil
	}
	switch k {
	case "enter", "D":
		dt := v.diffs[cp.Seq]
		if dt == nil || !dt.done {
			m.infoLine = "reading the diff…"
			return nil
		}
		text := dt.stat + "\n" + dt.diff
		if dt.err != "" {
			text = dt.err + "\n"
		}
		m.openPager(fmt.Sprintf("%s/%s %s", v.sandbox, v.session, cpLabel(cp)), text)
		return nil
	case "r":
		return m.askRewind(*cp)
	case "f":
		v.forkFrom = *cp
		name := v.sandbox + "-" + strings.ReplaceAll(strings.TrimPrefix(cpLabel(cp), "#"), " ", "")
		m.input.SetValue(name)
		m.input.CursorEnd()
		m.input.Prompt = fmt.Sprintf("fork %s/%s at %s into a new sandbox (NAME, or NAME BACKEND for another backend): ", v.sandbox, v.session, cpLabel(cp))
		m.mode = modeForkName
		return m.input.Focus()
	}
	return nil
}

// cpLabel names a checkpoint for the user: "turn 3", or "#12" for one not a turn's
// (taken by hand, or a rewind's undo point), with its name.
func cpLabel(cp *wire.Checkpoint) string {
	if cp.Kind == wire.CheckpointTurn && cp.Turn > 0 {
		return fmt.Sprintf("turn %d", cp.Turn)
	}
	if cp.Name != "" {
		return fmt.Sprintf("#%d (%s)", cp.Seq, termtext.Escape(cp.Name))
	}
	return fmt.Sprintf("#%d", cp.Seq)
}

// askRewind asks before putting the session's files and conversation back to cp.
func (m *Model) askRewind(cp wire.Checkpoint) tea.Cmd {
	v := m.timeline
	sb, name, label := v.sandbox, v.session, cpLabel(&cp)
	target := sb + "/" + name
	if cp.Seq == v.current() {
		m.errLine = fmt.Sprintf("%s is at %s already", target, label)
		return nil
	}
	m.confirm = confirmation{
		text: fmt.Sprintf("Rewind %s to %s? Files and conversation go back (the agent restarts there); the state now is kept, to undo it. [y/N]", target, label),
		action: func() tea.Cmd {
			d := m.d
			return m.call(fmt.Sprintf("rewinding %s to %s", target, label), func(ctx context.Context) doneMsg {
				res, err := d.Rewind(ctx, sb, name, wire.RewindRequest{To: fmt.Sprintf("#%d", cp.Seq)})
				if err != nil {
					return doneMsg{err: fmt.Errorf("rewind %s: %w", target, err), refresh: []string{sb}}
				}
				info := fmt.Sprintf("rewound %s to %s", target, label)
				if u := res.Undo.Name; u != "" {
					info += fmt.Sprintf("; undo: paddock rewind %s --to %s", target, u)
				}
				if res.Fresh && res.Note != "" {
					info += " (" + res.Note + ")"
				}
				return doneMsg{info: info, refresh: []string{sb}}
			})
		},
	}
	m.mode = modeConfirm
	return nil
}

// forkNameKey handles a key while a fork's new sandbox is named (and, after the name, a
// backend other than its parent's): enter forks, esc drops it.
func (m *Model) forkNameKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc":
		m.mode = m.listMode()
		m.input.Blur()
		return nil
	case "enter":
		m.mode = m.listMode()
		m.input.Blur()
		v := m.timeline
		words := strings.Fields(m.input.Value())
		if len(words) == 0 || v == nil {
			return nil
		}
		if len(words) > 2 {
			m.errLine = "type the new sandbox's name, and a backend after it for another: NAME [BACKEND]"
			return nil
		}
		newName, backend := words[0], ""
		if len(words) == 2 {
			backend = words[1]
		}
		sb, name, cp := v.sandbox, v.session, v.forkFrom
		label := cpLabel(&cp)
		d := m.d
		return m.call(fmt.Sprintf("forking %s/%s at %s into %s", sb, name, label, newName), func(ctx context.Context) doneMsg {
			res, err := d.Fork(ctx, sb, wire.ForkRequest{Session: name, At: fmt.Sprintf("#%d", cp.Seq), New: newName, Backend: backend}, nil)
			if err != nil {
				return doneMsg{err: fmt.Errorf("fork %s/%s: %w", sb, name, err)}
			}
			made := strings.Join(res.Sandboxes, ", ")
			if made == "" {
				made = newName
			}
			return doneMsg{info: fmt.Sprintf("forked %s/%s at %s into %s, with its conversation", sb, name, label, made), refresh: res.Sandboxes}
		})
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return cmd
}

// renderTimeline draws the timeline: the checkpoints, the selected one's diff beside them.
func (m *Model) renderTimeline() string {
	v := m.timeline
	body := m.listAndSide(m.renderCheckpoints, m.renderCpDiff)
	head := styleTitle.Render("paddock · "+v.sandbox+"/"+v.session+" · turns") + styleDim.Render("  "+plural(len(v.cps), "checkpoint", "checkpoints"))
	foot := ansi.Truncate(styleDim.Render(timelineKeys), m.width, "…")
	return ansi.Truncate(head, m.width, "…") + "\n" + body + "\n" + m.statusLine() + "\n" + foot
}

func (m *Model) renderCheckpoints(w, h int) string {
	v := m.timeline
	switch {
	case !v.loaded:
		return pad(m.spin.View()+" reading checkpoints…", w, h)
	case v.err != "" && len(v.cps) == 0:
		return pad(styleError.Render("✕ "+termtext.Escape(v.err)), w, h)
	case len(v.cps) == 0:
		return pad("No checkpoints yet: one is taken when the agent ends a turn (or by hand: paddock checkpoint "+v.sandbox+").", w, h)
	}
	now, cur := m.now(), v.current()
	return renderWindow(len(v.cps), v.cursor, &v.top, w, h, func(i int) string {
		cp := &v.cps[i]
		label := fmt.Sprintf("#%d", cp.Seq)
		switch {
		case cp.Kind == wire.CheckpointTurn && cp.Turn > 0:
			label = fmt.Sprintf("turn %d", cp.Turn)
		case cp.Kind == wire.CheckpointRewind && cp.RewoundTo > 0:
			label += " undo"
		}
		mark := " "
		if cp.Seq == cur {
			mark = "▶"
		}
		line := fmt.Sprintf("%s %-9s %4s  %-9s ", mark, ansi.Truncate(label, 9, "…"), ageText(now.Sub(cp.Time)), plural(cp.Files, "file", "files"))
		line = styleTitle.Render(line) + stylePass.Render(fmt.Sprintf("+%d", cp.Added)) + " " + styleFail.Render(fmt.Sprintf("−%d", cp.Deleted))
		what := cp.Prompt
		switch {
		case cp.Kind == wire.CheckpointRewind && cp.RewoundTo > 0:
			what = fmt.Sprintf("before the rewind to #%d (%s)", cp.RewoundTo, cp.Name)
		case cp.Kind == wire.CheckpointManual:
			what = strings.TrimSpace(cp.Name + " (taken by hand) " + what)
		}
		what = termtext.Escape(strings.Join(strings.Fields(what), " "))
		return ansi.Truncate(line+"  "+styleDim.Render(what), w, "…")
	})
}

// renderCpDiff is the selected checkpoint's details and diff: its stat, then the diff.
func (m *Model) renderCpDiff(w, h int) string {
	v := m.timeline
	cp := v.selected()
	if cp == nil {
		return pad("", w, h)
	}
	lines := []string{styleTitle.Render(cpLabel(cp)) + styleDim.Render(fmt.Sprintf("  #%d · %s · %s", cp.Seq, cp.Kind, cp.Time.Local().Format("2006-01-02 15:04:05")))}
	if cp.Prompt != "" {
		lines = append(lines, strings.Split(wrap(stylePrompt.Render("> ")+termtext.Escape(strings.TrimSpace(cp.Prompt)), w), "\n")...)
	}
	if c := cp.Conversation; c != nil {
		lines = append(lines, styleDim.Render(fmt.Sprintf("conversation: %s, %s", c.Agent, termtext.Size(c.Size))))
	}
	lines = append(lines, "")
	dt := v.diffs[cp.Seq]
	switch {
	case dt == nil || !dt.done:
		lines = append(lines, styleDim.Render(m.spin.View()+" reading the diff…"))
	case dt.err != "":
		lines = append(lines, styleError.Render(wrap("✕ "+termtext.Escape(dt.err), w)))
	case len(dt.statHead) == 0 && len(dt.head) == 0:
		lines = append(lines, styleDim.Render("(no change to the files)"))
	default:
		for _, l := range dt.statHead {
			lines = append(lines, styleDim.Render(l))
		}
		lines = append(lines, "")
		for _, l := range dt.head {
			switch {
			case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
				l = styleTitle.Render(l)
			case strings.HasPrefix(l, "+"):
				l = stylePass.UnsetBold().Render(l)
			case strings.HasPrefix(l, "-"):
				l = styleFail.UnsetBold().Render(l)
			case strings.HasPrefix(l, "@@"):
				l = styleKey.Render(l)
			}
			lines = append(lines, l)
		}
	}
	for i, l := range lines {
		lines[i] = ansi.Truncate(strings.ReplaceAll(l, "\t", "    "), w, "…")
	}
	return pad(strings.Join(lines, "\n"), w, h)
}
