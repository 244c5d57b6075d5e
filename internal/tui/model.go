package tui

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"charm.land/bubbles/v2/spinner"
	"charm.land/bubbles/v2/textinput"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// mode is what has the keyboard.
type mode int

const (
	modeList mode = iota
	modeFilter
	modeHelp
	modeConfirm
	modeMessage
	modePager
	modeDialog
	modeTasks    // the tasks view (tasks.go)
	modeReview   // a review to an attempt's agent being written
	modeTimeline // a session's checkpoints (timeline.go)
	modeForkName // the name of a sandbox forked from a checkpoint being written
)

// callTimeout bounds one daemon call the user waits on; a longer one is an error line.
const callTimeout = 2 * time.Minute

// Model is the TUI's state. It is a tea.Model; New makes one.
type Model struct {
	ctx    context.Context
	cancel context.CancelFunc
	opts   Options
	d      Daemon

	width, height int

	sandboxes map[string]wire.SandboxInfo
	sessions  map[string][]wire.SessionInfo
	// runs are each sandbox's runs of paddock's own agent, newest first; runDetail the
	// selected run's steps, for the preview.
	runs      map[string][]wire.Run
	runDetail *wire.RunDetail
	// said is the last line of each session's conversation, note the last thing an event
	// said about it (its exit), activity the time of its last event; by "sandbox/session".
	said     map[string]string
	note     map[string]string
	activity map[string]time.Time
	// sem bounds the transcript reads in flight, so a large listing does not flood the
	// daemon.
	sem       chan struct{}
	collapsed map[string]bool
	loaded    bool
	rows      []row
	cursor    int
	selKey    string
	top       int

	filter textinput.Model
	input  textinput.Model
	pager  viewport.Model
	title  string // the pager's
	spin   spinner.Model

	// pagerApply, when set, is what a does in the pager (apply a proposed allowlist).
	pagerApply *confirmation

	mode    mode
	confirm confirmation
	// tasks is the tasks view's state while it is open.
	tasks  *taskView
	dialog *dialog
	// timeline is the timeline's state while it is open.
	timeline *timelineView

	busy     map[int]string // running calls, by id: what the spinner says
	nextCall int
	errLine  string
	infoLine string

	preview    []wire.TranscriptEntry
	previewKey string
	previewErr string
	// screen is the previewed session's screen, when it has no transcript.
	screen string

	evch chan tea.Msg
	// spinning is set while the spinner's ticks run.
	spinning bool
	// streamDown is set while the event stream is being reconnected.
	streamDown bool
	lastSeq    int64
	now        func() time.Time
}

// confirmation is a question asked before something that loses work.
type confirmation struct {
	text   string
	action func() tea.Cmd
}

// Messages the model sends itself.
type (
	listedMsg struct {
		sandboxes []wire.SandboxInfo
		sessions  map[string][]wire.SessionInfo
		runs      map[string][]wire.Run
		err       error
	}
	sandboxMsg struct {
		name     string
		info     wire.SandboxInfo
		sessions []wire.SessionInfo
		runs     []wire.Run
		gone     bool
		err      error
	}
	eventsMsg     []wire.Event
	streamEndMsg  struct{ err error }
	reconnectMsg  struct{}
	transcriptMsg struct {
		key     string
		entries []wire.TranscriptEntry
		err     error
	}
	// doneMsg ends a call: info goes to the info line, err to the error line, and
	// pager text (sync, diff) opens the pager.
	doneMsg struct {
		id      int
		info    string
		err     error
		title   string
		pager   string
		refresh []string
		// ask, when set, is a question to put next (a merge planned, to confirm).
		ask *confirmation
		// apply, when set, is what a does in the pager this opens.
		apply *confirmation
	}
	tickMsg   time.Time
	screenMsg struct {
		key, text string
		err       error
	}
	// runMsg is a run's steps, for the preview.
	runMsg struct {
		detail wire.RunDetail
		err    error
	}
	// transcriptAgainMsg asks to read a session's transcript again.
	transcriptAgainMsg struct{ sandbox, name string }
)

// New returns the TUI's model; ctx bounds every call it makes.
func New(ctx context.Context, opts Options) *Model {
	ctx, cancel := context.WithCancel(ctx)
	f := textinput.New()
	f.Prompt = "/ "
	in := textinput.New()
	in.CharLimit = 4000
	sp := spinner.New(spinner.WithSpinner(spinner.Dot))
	if opts.Command == nil {
		opts.Command = func(ctx context.Context, args ...string) *exec.Cmd {
			return exec.CommandContext(ctx, "paddock", args...)
		}
	}
	if opts.LookPath == nil {
		opts.LookPath = exec.LookPath
	}
	return &Model{
		ctx: ctx, cancel: cancel, opts: opts, d: opts.Daemon,
		width: 100, height: 30,
		sandboxes: map[string]wire.SandboxInfo{}, sessions: map[string][]wire.SessionInfo{}, runs: map[string][]wire.Run{},
		said: map[string]string{}, note: map[string]string{}, activity: map[string]time.Time{},
		sem: make(chan struct{}, 4), collapsed: map[string]bool{},
		filter: f, input: in, spin: sp, pager: viewport.New(),
		busy: map[int]string{}, evch: make(chan tea.Msg, 256), now: time.Now,
	}
}

// Close stops the event stream and any call still running.
func (m *Model) Close() { m.cancel() }

// Init loads the listing and opens the event stream.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.loadAll(), m.streamEvents(""), m.waitEvents(), m.spinCmd(), tickEvery())
}

// tickEvery redraws the ages once a minute; nothing is fetched.
func tickEvery() tea.Cmd {
	return tea.Tick(time.Minute, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// loadPreview fetches the selected session's conversation when it is not the one shown.
func (m *Model) loadPreview(force bool) tea.Cmd {
	r, ok := m.selected()
	if ok && r.kind == rowRun {
		m.preview, m.previewKey, m.previewErr = nil, "", ""
		if m.runDetail != nil && m.runDetail.ID != r.run {
			m.runDetail = nil
		}
		return m.readRun(r.run)
	}
	if !ok || r.kind != rowSession {
		m.preview, m.previewKey, m.previewErr = nil, "", ""
		return nil
	}
	key := r.sandbox + "/" + r.session
	if key == m.previewKey && !force {
		return nil
	}
	if key != m.previewKey {
		m.preview, m.previewErr, m.screen = nil, "", ""
	}
	m.previewKey = key
	return m.readTranscript(r.sandbox, r.session)
}

func (m *Model) selected() (row, bool) {
	if m.cursor < 0 || m.cursor >= len(m.rows) {
		return row{}, false
	}
	return m.rows[m.cursor], true
}

func (m *Model) runInfo(sb, id string) (wire.Run, bool) {
	for _, r := range m.runs[sb] {
		if r.ID == id {
			return r, true
		}
	}
	return wire.Run{}, false
}

func (m *Model) sessionInfo(sb, name string) (wire.SessionInfo, bool) {
	for _, s := range m.sessions[sb] {
		if s.Name == name {
			return s, true
		}
	}
	return wire.SessionInfo{}, false
}

// relayout rebuilds the rows and keeps the selection on the same thing.
func (m *Model) relayout() {
	m.rows = buildRows(m.sandboxes, m.sessions, m.runs, m.collapsed, m.filter.Value())
	if m.selKey != "" {
		for i, r := range m.rows {
			if r.key() == m.selKey {
				m.cursor = i
				return
			}
		}
	}
	if m.cursor >= len(m.rows) {
		m.cursor = len(m.rows) - 1
	}
	if m.cursor < 0 {
		m.cursor = 0
	}
	if r, ok := m.selected(); ok {
		m.selKey = r.key()
	}
}

func (m *Model) move(delta int) tea.Cmd {
	if len(m.rows) == 0 {
		return nil
	}
	m.cursor = max(0, min(len(m.rows)-1, m.cursor+delta))
	m.selKey = m.rows[m.cursor].key()
	return m.loadPreview(false)
}

// applyEvent changes the state by what an event says, at once, and says which sandbox to
// read again for the rest.
func (m *Model) applyEvent(ev wire.Event) (refresh bool) {
	if ev.Seq > m.lastSeq {
		m.lastSeq = ev.Seq
	}
	key := ev.Sandbox + "/" + ev.Session
	switch ev.Kind {
	case "session-status":
		list := m.sessions[ev.Sandbox]
		for i := range list {
			if list[i].Name == ev.Session {
				if st := ev.Attrs["status"]; st != "" {
					list[i].Status = st
				}
			}
		}
		m.activity[key] = ev.Time
		return true
	case "session-exited":
		list := m.sessions[ev.Sandbox]
		for i := range list {
			if list[i].Name == ev.Session {
				list[i].Status = "exited"
				list[i].Detail = ev.Detail
			}
		}
		m.note[key], m.activity[key] = ev.Detail, ev.Time
		return true
	case "removed":
		delete(m.sandboxes, ev.Sandbox)
		delete(m.sessions, ev.Sandbox)
		delete(m.runs, ev.Sandbox)
		return false
	case "port-open", "port-closed", "egress-denied", "forward-ports":
		return false
	case "synced", "sync-failed", "branch-moved":
		return false
	}
	if ev.Session != "" {
		m.note[key], m.activity[key] = ev.Detail, ev.Time
	}
	return true
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.pager.SetWidth(msg.Width)
		m.pager.SetHeight(max(1, msg.Height-3))
		return m, nil
	case spinner.TickMsg:
		if len(m.busy) == 0 && m.dialog == nil && m.loaded {
			// Idle: let the spinner's ticks lapse, so nothing is redrawn. A new call
			// starts them again (spinCmd).
			m.spin, _ = m.spin.Update(msg)
			m.spinning = false
			return m, nil
		}
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	case tickMsg:
		return m, tickEvery()
	case listedMsg:
		m.loaded = true
		if msg.err != nil {
			m.errLine = "daemon: " + msg.err.Error()
		} else if m.streamDown {
			// The daemon answers again: the stream was opened again before this listing.
			m.streamDown = false
			m.errLine, m.infoLine = "", "reconnected to the daemon"
		}
		for _, sb := range msg.sandboxes {
			m.sandboxes[sb.Name] = sb
		}
		for name, ss := range msg.sessions {
			m.sessions[name] = ss
		}
		for name, rs := range msg.runs {
			m.runs[name] = rs
		}
		m.relayout()
		return m, tea.Batch(m.loadPreview(false), m.readAllTranscripts())
	case sandboxMsg:
		switch {
		case msg.gone:
			delete(m.sandboxes, msg.name)
			delete(m.sessions, msg.name)
			delete(m.runs, msg.name)
		case msg.err != nil:
			m.errLine = msg.name + ": " + msg.err.Error()
		default:
			m.sandboxes[msg.name] = msg.info
			m.sessions[msg.name] = msg.sessions
			m.runs[msg.name] = msg.runs
		}
		m.relayout()
		return m, m.loadPreview(false)
	case eventsMsg:
		seen := map[string]bool{}
		talked := map[string]bool{}
		var cmds []tea.Cmd
		for _, ev := range msg {
			if m.applyEvent(ev) && ev.Sandbox != "" && !seen[ev.Sandbox] {
				seen[ev.Sandbox] = true
				cmds = append(cmds, m.refreshSandbox(ev.Sandbox))
			}
			if ev.Kind == "session-status" && !talked[ev.Sandbox+"/"+ev.Session] {
				// Agents write their transcript a moment after their hooks report: read
				// it now and once more shortly after.
				talked[ev.Sandbox+"/"+ev.Session] = true
				sb, name := ev.Sandbox, ev.Session
				cmds = append(cmds, m.readTranscript(sb, name), tea.Tick(1500*time.Millisecond, func(time.Time) tea.Msg {
					return transcriptAgainMsg{sb, name}
				}))
			}
		}
		m.relayout()
		cmds = append(cmds, m.waitEvents(), m.taskEvents(msg), m.timelineEvents(msg))
		return m, tea.Batch(cmds...)
	case streamEndMsg:
		text := "the event stream ended"
		if msg.err != nil {
			text = msg.err.Error()
		}
		m.errLine = "events: " + text + " (reconnecting)"
		m.streamDown = true
		return m, tea.Batch(m.waitEvents(), tea.Tick(2*time.Second, func(time.Time) tea.Msg { return reconnectMsg{} }))
	case reconnectMsg:
		since := ""
		if m.lastSeq > 0 {
			since = fmt.Sprint(m.lastSeq)
		}
		return m, tea.Batch(m.streamEvents(since), m.loadAll())
	case transcriptAgainMsg:
		return m, m.readTranscript(msg.sandbox, msg.name)
	case runMsg:
		if r, ok := m.selected(); ok && r.kind == rowRun && r.run == msg.detail.ID && msg.err == nil {
			m.runDetail = &msg.detail
		}
		return m, nil
	case transcriptMsg:
		if msg.err == nil {
			m.said[msg.key] = lastSaid(msg.entries)
		}
		if msg.key == m.previewKey {
			m.preview, m.previewErr = msg.entries, ""
			if msg.err != nil {
				m.previewErr = msg.err.Error()
			}
			if len(msg.entries) == 0 {
				if r, ok := m.selected(); ok && r.kind == rowSession {
					return m, m.readScreen(r.sandbox, r.session)
				}
			}
		}
		return m, nil
	case screenMsg:
		if msg.key == m.previewKey && msg.err == nil {
			m.screen = msg.text
		}
		return m, nil
	case doneMsg:
		delete(m.busy, msg.id)
		if msg.err != nil {
			m.errLine = msg.err.Error()
			m.infoLine = ""
		} else if msg.info != "" {
			m.infoLine = msg.info
		}
		var cmds []tea.Cmd
		for _, name := range msg.refresh {
			cmds = append(cmds, m.refreshSandbox(name))
		}
		if m.tasks != nil {
			cmds = append(cmds, m.loadTasks())
		}
		if m.timeline != nil {
			cmds = append(cmds, m.loadCheckpoints())
		}
		if msg.pager != "" || msg.title != "" {
			m.openPager(msg.title, msg.pager)
			m.pagerApply = msg.apply
		}
		if msg.ask != nil && msg.err == nil {
			m.confirm, m.mode = *msg.ask, modeConfirm
		}
		return m, tea.Batch(cmds...)
	case dialogResultMsg:
		return m.dialogResult(msg)
	case tea.KeyPressMsg:
		return m.key(msg)
	case tasksMsg, tasksTickMsg:
		cmd, _ := m.tasksUpdate(msg)
		return m, cmd
	case checkpointsMsg, cpDiffMsg:
		cmd, _ := m.timelineUpdate(msg)
		return m, cmd
	case tea.MouseClickMsg:
		return m.click(msg)
	case tea.MouseWheelMsg:
		if m.mode == modePager {
			var cmd tea.Cmd
			m.pager, cmd = m.pager.Update(msg)
			return m, cmd
		}
		if msg.Button == tea.MouseWheelUp {
			return m, m.move(-1)
		}
		if msg.Button == tea.MouseWheelDown {
			return m, m.move(1)
		}
	}
	if m.mode == modeDialog && m.dialog != nil {
		return m, tea.Batch(m.dialog.update(msg), m.dialog.checkInside())
	}
	return m, nil
}

func (m *Model) openPager(title, text string) {
	m.title = title
	m.pager.SetWidth(m.width)
	m.pager.SetHeight(max(1, m.height-3))
	m.pager.SetContent(text)
	m.pager.GotoTop()
	m.mode = modePager
}

// click selects the row under the mouse (the list starts on the second line).
func (m *Model) click(msg tea.MouseClickMsg) (tea.Model, tea.Cmd) {
	if m.mode != modeList || msg.Button != tea.MouseLeft {
		return m, nil
	}
	i := m.top + msg.Y - 1
	if msg.Y < 1 || i < 0 || i >= len(m.rows) || msg.X >= m.listWidth() {
		return m, nil
	}
	if i == m.cursor && m.rows[i].kind == rowProject {
		m.toggle(m.rows[i].project)
		return m, nil
	}
	m.cursor = i
	m.selKey = m.rows[i].key()
	return m, m.loadPreview(false)
}

func (m *Model) toggle(project string) {
	m.collapsed[project] = !m.collapsed[project]
	m.selKey = "p:" + project
	m.relayout()
}
