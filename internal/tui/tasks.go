package tui

// The tasks view (T from the sandboxes): every task, each with its attempts ranked
// beneath it (rank, agent, state, checks, diff, cost, time, why), the selected one's
// details beside them; l lands an attempt through the merge queue, P opens its pull
// request, r sends its agent a review comment, x drops a task's open landing. Kept
// current from the task events on the event stream, and read again every few seconds
// while open (an agent at work sends no task event).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/termtext"
)

// tasksEvery is how often the open tasks view reads the tasks again.
const tasksEvery = 3 * time.Second

// taskView is the tasks view's state; the Model holds one while the view is open.
type taskView struct {
	tasks  []wire.Task
	queue  []wire.QueueEntry
	err    string
	loaded bool
	rows   []taskRow
	cursor int
	selKey string
	top    int
	// review is the attempt a review being written goes to.
	review taskRow
}

// taskRow is a line of the view: a task (n 0) or one of its attempts.
type taskRow struct {
	task string
	n    int
}

func (r taskRow) key() string { return fmt.Sprintf("%s/%d", r.task, r.n) }

// Messages of the tasks view.
type (
	tasksMsg struct {
		tasks []wire.Task
		queue []wire.QueueEntry
		err   error
	}
	tasksTickMsg struct{}
)

const tasksKeys = "↑/↓ move · l land · P pull request · r review · enter attach · D diff · s show · x drop landing · esc back"

// openTasks opens the tasks view and reads the tasks.
func (m *Model) openTasks() tea.Cmd {
	if m.tasks == nil {
		m.tasks = &taskView{}
	}
	m.mode = modeTasks
	return tea.Batch(m.loadTasks(), tea.Tick(tasksEvery, func(time.Time) tea.Msg { return tasksTickMsg{} }))
}

// listMode is the mode a question, the pager or the help goes back to.
func (m *Model) listMode() mode {
	if m.timeline != nil {
		return modeTimeline
	}
	if m.tasks != nil {
		return modeTasks
	}
	return modeList
}

// loadTasks reads the tasks and the merge queue.
func (m *Model) loadTasks() tea.Cmd {
	ctx, d := m.ctx, m.d
	return func() tea.Msg {
		ts, err := d.Tasks(ctx)
		if err != nil {
			return tasksMsg{err: err}
		}
		q, err := d.Queue(ctx, "")
		return tasksMsg{tasks: ts, queue: q, err: err}
	}
}

// tasksUpdate handles the tasks view's messages; ok is false for any other.
func (m *Model) tasksUpdate(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case tasksMsg:
		if m.tasks == nil {
			return nil, true
		}
		v := m.tasks
		v.loaded = true
		v.err = ""
		if msg.err != nil {
			v.err = msg.err.Error()
		}
		if msg.tasks != nil || msg.err == nil {
			v.tasks = msg.tasks
		}
		if msg.queue != nil || msg.err == nil {
			v.queue = msg.queue
		}
		v.relayout()
		return nil, true
	case tasksTickMsg:
		if m.tasks == nil {
			return nil, true
		}
		return tea.Batch(m.loadTasks(), tea.Tick(tasksEvery, func(time.Time) tea.Msg { return tasksTickMsg{} })), true
	}
	return nil, false
}

// taskEvents reads the tasks again when an event concerns one: a task's own, or its agent's.
func (m *Model) taskEvents(evs []wire.Event) tea.Cmd {
	if m.tasks == nil {
		return nil
	}
	for _, ev := range evs {
		if strings.HasPrefix(ev.Kind, "task-") || (ev.Kind == "session-status" && m.tasks.attemptOf(ev.Sandbox)) {
			return m.loadTasks()
		}
	}
	return nil
}

func (v *taskView) attemptOf(sandbox string) bool {
	for _, t := range v.tasks {
		for _, a := range t.Attempts {
			if a.Sandbox == sandbox {
				return true
			}
		}
	}
	return false
}

// relayout lists the tasks, newest first, each with its attempts in rank order, and keeps
// the selection on the same line.
func (v *taskView) relayout() {
	v.rows = v.rows[:0]
	for i := len(v.tasks) - 1; i >= 0; i-- {
		t := &v.tasks[i]
		v.rows = append(v.rows, taskRow{task: t.Name})
		for _, a := range ranked(t) {
			v.rows = append(v.rows, taskRow{task: t.Name, n: a.N})
		}
	}
	for i, r := range v.rows {
		if r.key() == v.selKey {
			v.cursor = i
			return
		}
	}
	v.cursor = max(0, min(v.cursor, len(v.rows)-1))
	if v.cursor < len(v.rows) {
		v.selKey = v.rows[v.cursor].key()
	}
}

// ranked is a task's attempts in rank order (unranked last, by number).
func ranked(t *wire.Task) []wire.Attempt {
	as := slices.Clone(t.Attempts)
	slices.SortStableFunc(as, func(a, b wire.Attempt) int {
		ra, rb := a.Rank, b.Rank
		if ra == 0 {
			ra = 1 << 30
		}
		if rb == 0 {
			rb = 1 << 30
		}
		if ra != rb {
			return ra - rb
		}
		return a.N - b.N
	})
	return as
}

func (v *taskView) task(name string) *wire.Task {
	for i := range v.tasks {
		if v.tasks[i].Name == name {
			return &v.tasks[i]
		}
	}
	return nil
}

// selected is the selected line's task and attempt (nil on a task's line).
func (v *taskView) selected() (*wire.Task, *wire.Attempt) {
	if v.cursor < 0 || v.cursor >= len(v.rows) {
		return nil, nil
	}
	r := v.rows[v.cursor]
	t := v.task(r.task)
	if t == nil || r.n == 0 {
		return t, nil
	}
	for i := range t.Attempts {
		if t.Attempts[i].N == r.n {
			return t, &t.Attempts[i]
		}
	}
	return t, nil
}

// target is the attempt a key acts on: the selected one, or on a task's line its best.
func (v *taskView) target() (*wire.Task, *wire.Attempt) {
	t, a := v.selected()
	if t != nil && a == nil {
		a = t.Best()
	}
	return t, a
}

// openEntry is the task's landing still on its way, if any.
func (v *taskView) openEntry(task string) *wire.QueueEntry {
	for i := len(v.queue) - 1; i >= 0; i-- {
		if e := &v.queue[i]; e.Task == task && e.Open() {
			return e
		}
	}
	return nil
}

// lastEntry is the task's newest queue entry, if any.
func (v *taskView) lastEntry(task string, n int) *wire.QueueEntry {
	for i := len(v.queue) - 1; i >= 0; i-- {
		if e := &v.queue[i]; e.Task == task && (n == 0 || e.Attempt == n) {
			return e
		}
	}
	return nil
}

func (v *taskView) move(delta int) {
	if len(v.rows) == 0 {
		return
	}
	v.cursor = max(0, min(len(v.rows)-1, v.cursor+delta))
	v.selKey = v.rows[v.cursor].key()
}

// tasksKey handles a key in the tasks view.
func (m *Model) tasksKey(k string) tea.Cmd {
	v := m.tasks
	switch k {
	case "esc", "q", "T":
		m.tasks, m.mode = nil, modeList
		m.errLine, m.infoLine = "", ""
		return nil
	case "up", "k":
		v.move(-1)
		return nil
	case "down", "j":
		v.move(1)
		return nil
	case "home", "g":
		v.move(-len(v.rows))
		return nil
	case "end", "G":
		v.move(len(v.rows))
		return nil
	case "?":
		m.mode = modeHelp
		return nil
	}
	t, a := v.target()
	if t == nil {
		return nil
	}
	switch k {
	case "s":
		if len(t.Attempts) == 0 {
			return nil
		}
		return m.runCLI("reading task "+t.Name, "task "+t.Name, t.Attempts[0].Sandbox, "task", "show", t.Name)
	case "x":
		return m.askDrop(t.Name)
	}
	if a == nil {
		m.errLine = fmt.Sprintf("task %s has no attempt ranked yet", t.Name)
		return nil
	}
	switch k {
	case "l":
		return m.askLand(t, a, false)
	case "P":
		return m.askLand(t, a, true)
	case "r":
		v.review = taskRow{task: t.Name, n: a.N}
		m.input.SetValue("")
		m.input.Prompt = fmt.Sprintf("review to %s #%d (%s): ", t.Name, a.N, a.Agent)
		m.mode = modeReview
		return m.input.Focus()
	case "enter":
		if a.Sandbox == "" || a.Session == "" {
			m.errLine = fmt.Sprintf("attempt #%d has no session yet", a.N)
			return nil
		}
		return m.attach(a.Sandbox, a.Session)
	case "D":
		return m.runCLI("diffing "+a.Sandbox, "diff "+a.Sandbox, a.Sandbox, "diff", a.Sandbox)
	}
	return nil
}

// reviewKey handles a key while a review is written: enter sends it, esc drops it.
func (m *Model) reviewKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc":
		m.mode = modeTasks
		m.input.Blur()
		return nil
	case "enter":
		m.mode = modeTasks
		m.input.Blur()
		text := strings.TrimSpace(m.input.Value())
		r := m.tasks.review
		if text == "" {
			return nil
		}
		d := m.d
		return m.call(fmt.Sprintf("sending the review to %s #%d", r.task, r.n), func(ctx context.Context) doneMsg {
			a, err := d.ReviewAttempt(ctx, r.task, r.n, wire.ReviewRequest{Message: text})
			if err != nil {
				return doneMsg{err: fmt.Errorf("review %s/%d: %w", r.task, r.n, err)}
			}
			return doneMsg{info: fmt.Sprintf("sent to %s #%d (%s): its next work is checked again", r.task, r.n, a.Agent)}
		})
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return cmd
}

// askLand asks before landing an attempt (or opening its pull request); a landing the
// daemon refuses for files that run code on the host once landed is asked about again,
// naming them, and sent with yes on a second y.
func (m *Model) askLand(t *wire.Task, a *wire.Attempt, pr bool) tea.Cmd {
	if e := m.tasks.openEntry(t.Name); e != nil {
		m.errLine = fmt.Sprintf("attempt #%d of %s is landing already (%s): x drops it", e.Attempt, t.Name, e.State)
		return nil
	}
	name, n, agent, into := t.Name, a.N, a.Agent, t.Branch
	if into == "" {
		into = "the task's branch"
	}
	q := fmt.Sprintf("Land attempt #%d (%s) of %s into %s? It is rebased in its sandbox, checked again, and %s fast-forwarded only if the checks pass.", n, agent, name, into, into)
	if pr {
		q = fmt.Sprintf("Open a pull request of attempt #%d (%s) of %s? Its branch is pushed to the repository's remote.", n, agent, name)
	}
	if len(t.Checks) > 0 && (a.Passed == nil || !*a.Passed) {
		q += " Its checks have not passed."
	}
	var land func(yes bool) func() tea.Cmd
	land = func(yes bool) func() tea.Cmd {
		return func() tea.Cmd {
			d := m.d
			what := fmt.Sprintf("landing %s #%d", name, n)
			if pr {
				what = fmt.Sprintf("opening a pull request of %s #%d", name, n)
			}
			return m.call(what, func(ctx context.Context) doneMsg {
				e, err := d.LandTask(ctx, name, wire.LandRequest{Attempt: n, PR: pr, Yes: yes})
				if err != nil && !yes && needsYes(err) {
					return doneMsg{info: "landing refused: read why", ask: &confirmation{
						text:   "WARNING: " + termtext.Escape(err.Error()) + ". Land anyway? [y/N]",
						action: land(true),
					}}
				}
				if err != nil {
					return doneMsg{err: fmt.Errorf("land %s #%d: %w", name, n, err)}
				}
				return doneMsg{info: fmt.Sprintf("attempt #%d of %s is in the merge queue for %s (%s)", n, name, e.Into, e.State)}
			})
		}
	}
	m.confirm = confirmation{text: q + " [y/N]", action: land(false)}
	m.mode = modeConfirm
	return nil
}

// needsYes says a landing was refused for files that run code on the host once landed,
// which a landing with yes accepts.
func needsYes(err error) bool {
	text := err.Error() + " " + apperr.HintOf(err)
	return strings.Contains(text, "--yes") || strings.Contains(text, "run code on")
}

// askDrop asks before dropping a task's landing on its way.
func (m *Model) askDrop(task string) tea.Cmd {
	e := m.tasks.openEntry(task)
	if e == nil {
		m.errLine = "task " + task + " has no landing on its way"
		return nil
	}
	id, n := e.ID, e.Attempt
	m.confirm = confirmation{
		text: fmt.Sprintf("Drop the landing of attempt #%d of %s (%s)? Nothing lands. [y/N]", n, task, e.State),
		action: func() tea.Cmd {
			d := m.d
			return m.call(fmt.Sprintf("dropping entry %d", id), func(ctx context.Context) doneMsg {
				if _, err := d.DropEntry(ctx, id); err != nil {
					return doneMsg{err: fmt.Errorf("drop %d: %w", id, err)}
				}
				return doneMsg{info: fmt.Sprintf("dropped the landing of %s #%d", task, n)}
			})
		},
	}
	m.mode = modeConfirm
	return nil
}

var (
	stylePass = lipgloss.NewStyle().Foreground(lipgloss.Color("2")).Bold(true)
	styleFail = lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
)

// renderTasks draws the tasks view: the list, the selection's details beside it.
func (m *Model) renderTasks() string {
	v := m.tasks
	body := m.listAndSide(m.renderTaskList, func(w, h int) string { return pad(strings.Join(m.taskDetail(w), "\n"), w, h) })
	head := styleTitle.Render("paddock · tasks") + styleDim.Render("  "+plural(len(v.tasks), "task", "tasks"))
	foot := ansi.Truncate(styleDim.Render(tasksKeys), m.width, "…")
	return ansi.Truncate(head, m.width, "…") + "\n" + body + "\n" + m.statusLine() + "\n" + foot
}

func (m *Model) renderTaskList(w, h int) string {
	v := m.tasks
	switch {
	case !v.loaded:
		return pad(m.spin.View()+" reading tasks…", w, h)
	case v.err != "" && len(v.tasks) == 0:
		return pad(styleError.Render("✕ "+termtext.Escape(v.err)), w, h)
	case len(v.rows) == 0:
		return pad("No tasks yet. Start one: paddock task new REPO --prompt TEXT --agents claude:2,codex --check CMD", w, h)
	}
	now := m.now()
	return renderWindow(len(v.rows), v.cursor, &v.top, w, h, func(i int) string {
		r := v.rows[i]
		t := v.task(r.task)
		var line string
		if r.n == 0 {
			line = m.taskLine(t, now)
		} else {
			for _, a := range t.Attempts {
				if a.N == r.n {
					line = attemptLine(t, &a, now)
				}
			}
		}
		return ansi.Truncate(line, w, "…")
	})
}

// taskLine is a task's line: name, state, attempts, the best, cost, age, its landing.
func (m *Model) taskLine(t *wire.Task, now time.Time) string {
	var cost wire.UsageSum
	for _, a := range t.Attempts {
		cost.Add(a.Usage)
	}
	parts := []string{plural(len(t.Attempts), "attempt", "attempts")}
	if b := t.Best(); b != nil {
		parts = append(parts, fmt.Sprintf("best #%d %s", b.N, b.Agent))
	}
	if cost.Requests > 0 {
		parts = append(parts, wire.CostText(&cost))
	}
	if !t.Created.IsZero() {
		parts = append(parts, ageText(now.Sub(t.Created)))
	}
	line := styleProject.Render(termtext.Escape(t.Name)) + " " + taskStateStyle(t.State).Render(t.State) + styleDim.Render("  "+strings.Join(parts, " · "))
	if e := m.tasks.lastEntry(t.Name, 0); e != nil {
		line += "  " + taskStateStyle(e.State).Render(fmt.Sprintf("landing #%d: %s", e.Attempt, e.State))
	}
	return line
}

// attemptLine is an attempt's line: rank, agent, state, checks, diff, cost, time, why.
func attemptLine(t *wire.Task, a *wire.Attempt, now time.Time) string {
	rank := "  ?"
	if a.Rank > 0 {
		rank = fmt.Sprintf("%3s", fmt.Sprintf("#%d", a.Rank))
	}
	line := "  " + styleTitle.Render(rank) + fmt.Sprintf(" %-7s", a.Agent) + styleDim.Render(fmt.Sprintf(" (%d)", a.N)) + " " + taskStateStyle(a.State).Render(fmt.Sprintf("%-8s", a.State))
	line += " " + checksText(t, a)
	line += fmt.Sprintf("  %s +%d −%d", plural(a.Diff.Files, "file", "files"), a.Diff.Insertions, a.Diff.Deletions)
	line += "  " + wire.CostText(&a.Usage)
	if d := a.Elapsed(now); d >= time.Second {
		line += "  " + d.Round(time.Second).String()
	} else if d > 0 {
		line += "  " + d.Round(time.Millisecond).String()
	}
	if a.Verdict != nil && a.Verdict.Error == "" {
		line += fmt.Sprintf("  judge %d/10", a.Verdict.Score)
	}
	if a.Why != "" {
		line += styleDim.Render("  " + termtext.Escape(a.Why))
	}
	return line
}

// checksText says how an attempt's checks went: "✓ 2/2", "✗ 1/2", or not yet.
func checksText(t *wire.Task, a *wire.Attempt) string {
	if len(a.Checks) == 0 {
		if a.State == wire.AttemptChecking {
			return styleDim.Render("checking")
		}
		if len(t.Checks) == 0 {
			return styleDim.Render("no checks")
		}
		return styleDim.Render("unchecked")
	}
	ok := 0
	for _, c := range a.Checks {
		if c.Exit == 0 {
			ok++
		}
	}
	if ok == len(a.Checks) {
		return stylePass.Render(fmt.Sprintf("✓ %d/%d", ok, len(a.Checks)))
	}
	return styleFail.Render(fmt.Sprintf("✗ %d/%d", ok, len(a.Checks)))
}

// taskDetail is the selection's details: a task's prompt, checks and landing; an
// attempt's why, checks (the end of a failing one's output), verdict and reviews.
func (m *Model) taskDetail(w int) []string {
	t, a := m.tasks.selected()
	if t == nil {
		return nil
	}
	var out []string
	add := func(style lipgloss.Style, s string) {
		for _, l := range strings.Split(termtext.Escape(s), "\n") {
			out = append(out, style.Render(ansi.Truncate(l, w, "…")))
		}
	}
	plain := lipgloss.NewStyle()
	if a == nil {
		add(styleTitle, t.Name+" · "+t.State)
		add(styleDim, t.Repo+" · into "+t.Branch+" · base "+short(t.Base))
		if t.Error != "" {
			add(styleError, t.Error)
		}
		add(plain, "")
		add(plain, wrap(t.Prompt, w))
		if len(t.Checks) > 0 {
			add(plain, "")
			add(styleDim, "checks:")
			for _, c := range t.Checks {
				add(styleDim, wrap("  "+c, w))
			}
		}
		if e := m.tasks.lastEntry(t.Name, 0); e != nil {
			add(plain, "")
			add(taskStateStyle(e.State), fmt.Sprintf("landing #%d into %s: %s", e.Attempt, e.Into, e.State))
			if e.Detail != "" {
				add(plain, wrap(e.Detail, w))
			}
			if len(e.Conflicts) > 0 {
				add(styleError, "conflicts: "+strings.Join(e.Conflicts, ", "))
			}
			if e.PR != nil {
				add(plain, fmt.Sprintf("pull request #%d (%s) %s", e.PR.Number, e.PR.State, e.PR.URL))
			}
		}
		return out
	}
	add(styleTitle, fmt.Sprintf("#%d %s · attempt %d · %s", a.Rank, a.Agent, a.N, a.State))
	add(styleDim, a.Sandbox+" · "+a.Backend+" · "+a.Branch)
	if a.Why != "" {
		add(plain, wrap("why: "+a.Why, w))
	}
	if a.Error != "" {
		add(styleError, wrap(a.Error, w))
	}
	for _, c := range a.Checks {
		if c.Exit == 0 {
			add(stylePass, wrap("✓ "+c.Command, w))
			continue
		}
		add(styleFail, wrap(fmt.Sprintf("✗ %s (exit %d)", c.Command, c.Exit), w))
		lines := strings.Split(strings.TrimRight(c.Output, "\n"), "\n")
		add(styleDim, strings.Join(lines[max(0, len(lines)-8):], "\n"))
	}
	if v := a.Verdict; v != nil {
		if v.Error != "" {
			add(styleDim, wrap(fmt.Sprintf("judge %s: no score (%s)", v.Judge, v.Error), w))
		} else {
			add(plain, wrap(fmt.Sprintf("judge %s: %d/10 — %s", v.Judge, v.Score, v.Reason), w))
		}
	}
	for _, r := range a.Reviews {
		at := ""
		if r.File != "" {
			at = fmt.Sprintf(" on %s:%d", r.File, r.Line)
		}
		add(styleDim, wrap("review"+at+": "+r.Message, w))
	}
	if e := m.tasks.lastEntry(t.Name, a.N); e != nil {
		add(taskStateStyle(e.State), fmt.Sprintf("landing into %s: %s", e.Into, e.State))
		if e.Detail != "" {
			add(plain, wrap(e.Detail, w))
		}
	}
	return out
}

// wrap breaks text into lines of at most w cells.
func wrap(s string, w int) string {
	if w < 10 {
		return s
	}
	return ansi.Wrap(s, w, "")
}

func short(commit string) string {
	if len(commit) > 10 {
		return commit[:10]
	}
	return commit
}

// taskStateStyle colours a task's, an attempt's or a queue entry's state.
func taskStateStyle(state string) lipgloss.Style {
	switch state {
	case wire.TaskDone, wire.TaskLanded, wire.QueuePR:
		return lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	case wire.TaskFailed, wire.QueueConflict:
		return lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
	case wire.QueueDropped:
		return styleDim
	}
	return lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
}
