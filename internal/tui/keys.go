package tui

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/termtext"
)

// keyHelp is the help screen's table, and the footer's source.
var keyHelp = [][2]string{
	{"↑/↓ k/j", "move"},
	{"enter", "attach to the session (detach with ctrl-b d to come back); on a project: fold; on a run: all its steps"},
	{"←/→ space", "fold / unfold the project"},
	{"n", "new session"},
	{"R", "restart: start a stopped sandbox, resume the session's conversation"},
	{"s", "sync the sandbox's work into the host repo, and show what arrived"},
	{"M", "merge the sandbox's branch into the host repo's current branch (says what and asks first)"},
	{"D", "the sandbox's diff against where it started"},
	{"t", "turns: the session's checkpoints, each turn's diff; r rewinds files and conversation to one, f forks a new sandbox from it"},
	{"L", "the allowlist the sandbox's learn mode proposes (a applies it); one that never learned: start learning"},
	{"m", "send the session a one-line message without attaching"},
	{"f", "fork a session: a new one on a copy of its conversation (Claude Code)"},
	{"x", "stop the sandbox (on a run at work: cancel the run)"},
	{"d", "delete the session (on a sandbox line: the sandbox)"},
	{"T", "tasks: each task's attempts ranked, their checks; l lands one, P opens its pull request, r reviews it"},
	{"/", "filter by name, agent, status or backend; esc clears"},
	{"?", "this help"},
	{"q ctrl-c", "quit"},
}

const footerKeys = "enter attach · n new · R restart · s sync · M merge · D diff · t turns · m message · f fork · x stop · d delete · T tasks · / filter · ? help · q quit"

func (m *Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := msg.String()
	if k == "ctrl+c" {
		return m, tea.Quit
	}
	switch m.mode {
	case modeHelp:
		m.mode = m.listMode()
		return m, nil
	case modeTasks:
		return m, m.tasksKey(k)
	case modeTimeline:
		return m, m.timelineKey(k)
	case modeForkName:
		return m, m.forkNameKey(msg)
	case modeReview:
		return m, m.reviewKey(msg)
	case modePager:
		switch k {
		case "q", "esc":
			m.mode, m.pagerApply = m.listMode(), nil
			return m, nil
		case "a":
			if act := m.pagerApply; act != nil {
				m.mode, m.pagerApply = m.listMode(), nil
				return m, act.action()
			}
		}
		var cmd tea.Cmd
		m.pager, cmd = m.pager.Update(msg)
		return m, cmd
	case modeConfirm:
		m.mode = m.listMode()
		if k == "y" || k == "Y" {
			return m, m.confirm.action()
		}
		m.infoLine = "cancelled"
		return m, nil
	case modeFilter:
		switch k {
		case "esc":
			m.filter.SetValue("")
			m.filter.Blur()
			m.mode = modeList
		case "enter":
			m.filter.Blur()
			m.mode = modeList
		default:
			var cmd tea.Cmd
			m.filter, cmd = m.filter.Update(msg)
			m.relayout()
			return m, tea.Batch(cmd, m.loadPreview(false))
		}
		m.relayout()
		return m, m.loadPreview(false)
	case modeMessage:
		switch k {
		case "esc":
			m.mode = modeList
			m.input.Blur()
			return m, nil
		case "enter":
			m.mode = modeList
			m.input.Blur()
			return m, m.sendMessage(strings.TrimSpace(m.input.Value()))
		}
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		return m, cmd
	case modeDialog:
		cmd := m.dialog.key(msg)
		if m.dialog != nil {
			cmd = tea.Batch(cmd, m.dialog.checkInside())
		}
		return m, cmd
	}
	return m, m.listKey(k)
}

func (m *Model) listKey(k string) tea.Cmd {
	r, ok := m.selected()
	switch k {
	case "q":
		return tea.Quit
	case "up", "k":
		return m.move(-1)
	case "down", "j":
		return m.move(1)
	case "pgup":
		return m.move(-m.listHeight())
	case "pgdown":
		return m.move(m.listHeight())
	case "home", "g":
		return m.move(-len(m.rows))
	case "end", "G":
		return m.move(len(m.rows))
	case "?":
		m.mode = modeHelp
		return nil
	case "/":
		m.mode = modeFilter
		return m.filter.Focus()
	case "esc":
		m.errLine, m.infoLine = "", ""
		if m.filter.Value() != "" {
			m.filter.SetValue("")
			m.relayout()
		}
		return nil
	case "n":
		return m.openDialog()
	case "T":
		return m.openTasks()
	}
	if !ok {
		return nil
	}
	switch k {
	case "left", "right", "space", " ":
		if r.kind == rowProject {
			want := k == "left"
			if k == "space" || k == " " {
				want = !m.collapsed[r.project]
			}
			if m.collapsed[r.project] != want {
				m.toggle(r.project)
			}
		}
		return nil
	case "enter":
		switch r.kind {
		case rowProject:
			m.toggle(r.project)
			return nil
		case rowSandbox:
			return m.attach(r.sandbox, "")
		case rowRun:
			return m.runCLI("reading run "+r.run, "run "+r.run, r.sandbox, "run", "show", r.run)
		}
		return m.attach(r.sandbox, r.session)
	case "R":
		return m.restart(r)
	case "s":
		return m.runCLI("syncing "+r.sandbox, "sync "+r.sandbox, r.sandbox, "sync", r.sandbox)
	case "M":
		return m.askMerge(r.sandbox)
	case "D":
		return m.runCLI("diffing "+r.sandbox, "diff "+r.sandbox, r.sandbox, "diff", r.sandbox)
	case "L":
		return m.proposeAllowlist(r.sandbox)
	case "x":
		return m.askStop(r)
	case "d":
		return m.askDelete(r)
	case "m":
		if r.kind != rowSession {
			m.errLine = "select a session to send it a message"
			return nil
		}
		m.input.SetValue("")
		m.input.Prompt = fmt.Sprintf("message to %s/%s: ", r.sandbox, r.session)
		m.mode = modeMessage
		return m.input.Focus()
	case "f":
		return m.fork(r)
	case "t":
		return m.openTimeline(r)
	}
	return nil
}

// attach runs `paddock chat SANDBOX/SESSION` on the terminal and comes back when it ends.
func (m *Model) attach(sb, name string) tea.Cmd {
	if st := m.sandboxes[sb].State; st != "running" {
		m.errLine = fmt.Sprintf("%s is %s: press R to start it and resume the session", sb, st)
		return nil
	}
	target := sb
	if name != "" {
		target += "/" + name
		if se, ok := m.sessionInfo(sb, name); ok && se.Status == "exited" {
			m.errLine = fmt.Sprintf("%s has exited: press R to resume it", target)
			return nil
		}
	}
	cmd := m.opts.Command(m.ctx, "chat", target)
	if name == "" {
		cmd = m.opts.Command(m.ctx, "attach", target)
	}
	return tea.ExecProcess(cmd, func(err error) tea.Msg {
		if err != nil {
			return doneMsg{err: fmt.Errorf("attach %s: %w", target, err), refresh: []string{sb}}
		}
		if os.Getenv("TMUX") != "" {
			// Inside the user's own tmux, chat opens the session in a window of it.
			return doneMsg{info: "back from " + target, refresh: []string{sb}}
		}
		return doneMsg{info: "detached from " + target, refresh: []string{sb}}
	})
}

// restart brings a session back: the sandbox started first when stopped, then the agent
// relaunched on its conversation. On a sandbox line it only starts the sandbox.
func (m *Model) restart(r row) tea.Cmd {
	if r.kind == rowProject {
		return nil
	}
	d, sb, name := m.d, r.sandbox, r.session
	stopped := m.sandboxes[sb].State != "running"
	what := "restarting " + sb + "/" + name
	if r.kind == rowSandbox {
		what = "starting " + sb
	}
	return m.call(what, func(ctx context.Context) doneMsg {
		done := doneMsg{refresh: []string{sb}}
		if stopped {
			started, err := d.Start(ctx, sb)
			if err != nil {
				done.err = fmt.Errorf("start %s: %w", sb, err)
				return done
			}
			done.info = sb + " started"
			if len(started.Resumed) > 0 {
				done.info += ", resumed " + strings.Join(started.Resumed, ", ")
			}
			if slices.Contains(started.Resumed, name) {
				return done // the start resumed it
			}
		}
		if name == "" {
			return done
		}
		info, err := d.RestartSession(ctx, sb, name)
		if err != nil {
			done.err = fmt.Errorf("restart %s/%s: %w", sb, name, err)
			return done
		}
		// The row shows the status as it changes; the info line says only what stays
		// true ("resumed: starting" stayed there after the row said idle).
		done.info = fmt.Sprintf("%s/%s resumed", sb, name)
		if info.Status == "exited" || info.Status == "error" {
			done.info += ", then " + info.Status
		}
		return done
	})
}

// runCLI runs a paddock command on the host (sync and diff work on the host repo) and
// shows its output in the pager; sandbox sb is read again after.
func (m *Model) runCLI(what, title, sb string, args ...string) tea.Cmd {
	command := m.opts.Command
	return m.call(what, func(ctx context.Context) doneMsg {
		cmd := command(ctx, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Stdin = nil
		err := cmd.Run()
		text := termtext.Escape(out.String())
		if err != nil {
			return doneMsg{err: fmt.Errorf("paddock %s: %v", strings.Join(args, " "), firstLine(text, err)), title: title, pager: text, refresh: []string{sb}}
		}
		if strings.TrimSpace(text) == "" {
			text = "(nothing)\n"
		}
		return doneMsg{info: title + " done", title: title, pager: text, refresh: []string{sb}}
	})
}

// firstLine is the gist of a failed command: its last "paddock:" line, or err.
func firstLine(out string, err error) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "paddock: ") {
			return strings.TrimPrefix(lines[i], "paddock: ")
		}
	}
	return err.Error()
}

func (m *Model) askStop(r row) tea.Cmd {
	if r.kind == rowProject {
		return nil
	}
	if r.kind == rowRun {
		return m.askCancelRun(r)
	}
	sb := r.sandbox
	n := len(m.sessions[sb])
	m.confirm = confirmation{
		text: fmt.Sprintf("Stop %s? Its %d session(s) end (their conversations can be resumed with R); /workspace is kept. [y/N]", sb, n),
		action: func() tea.Cmd {
			d := m.d
			return m.call("stopping "+sb, func(ctx context.Context) doneMsg {
				if _, err := d.Stop(ctx, sb); err != nil {
					return doneMsg{err: fmt.Errorf("stop %s: %w", sb, err), refresh: []string{sb}}
				}
				return doneMsg{info: sb + " stopped", refresh: []string{sb}}
			})
		},
	}
	m.mode = modeConfirm
	return nil
}

// askCancelRun offers to cancel a run at work.
func (m *Model) askCancelRun(r row) tea.Cmd {
	run, _ := m.runInfo(r.sandbox, r.run)
	if run.Status != "running" {
		m.errLine = fmt.Sprintf("run %s is %s, not at work", r.run, run.Status)
		return nil
	}
	d, sb, id := m.d, r.sandbox, r.run
	m.confirm = confirmation{
		text: fmt.Sprintf("Cancel run %s? Its running tool is killed; `paddock run %s --resume %s` continues it later. [y/N]", id, sb, id),
		action: func() tea.Cmd {
			return m.call("cancelling "+id, func(ctx context.Context) doneMsg {
				got, err := d.CancelRun(ctx, id)
				if err != nil {
					return doneMsg{err: fmt.Errorf("cancel %s: %w", id, err), refresh: []string{sb}}
				}
				return doneMsg{info: "run " + id + " " + got.Status, refresh: []string{sb}}
			})
		},
	}
	m.mode = modeConfirm
	return nil
}

func (m *Model) askDelete(r row) tea.Cmd {
	d := m.d
	switch r.kind {
	case rowSession:
		sb, name := r.sandbox, r.session
		m.confirm = confirmation{
			text: fmt.Sprintf("Delete session %s/%s? Its process ends and it leaves the list; the sandbox and its files stay. [y/N]", sb, name),
			action: func() tea.Cmd {
				return m.call("deleting "+sb+"/"+name, func(ctx context.Context) doneMsg {
					if err := d.RemoveSession(ctx, sb, name); err != nil {
						return doneMsg{err: fmt.Errorf("delete %s/%s: %w", sb, name, err), refresh: []string{sb}}
					}
					return doneMsg{info: "deleted " + sb + "/" + name, refresh: []string{sb}}
				})
			},
		}
	case rowSandbox:
		sb := r.sandbox
		m.confirm = confirmation{
			text: fmt.Sprintf("Delete sandbox %s? A final snapshot is taken first, for `paddock restore` to bring it back; its %d session(s) end. [y/N]", sb, len(m.sessions[sb])),
			action: func() tea.Cmd {
				return m.call("taking the final snapshot of "+sb+", then deleting it", func(ctx context.Context) doneMsg {
					snap, err := d.Remove(ctx, sb, wire.RemoveRequest{Force: true}, nil)
					if err != nil {
						return doneMsg{err: fmt.Errorf("delete %s: %w", sb, err), refresh: []string{sb}}
					}
					if snap == nil { // its backend had lost it: nothing to snapshot
						return doneMsg{info: "deleted " + sb, refresh: []string{sb}}
					}
					return doneMsg{info: fmt.Sprintf("deleted %s; `paddock restore %s` brings it back", sb, snap.ID), refresh: []string{sb}}
				})
			},
		}
	default:
		return nil
	}
	m.mode = modeConfirm
	return nil
}

func (m *Model) sendMessage(text string) tea.Cmd {
	r, ok := m.selected()
	if !ok || r.kind != rowSession || text == "" {
		return nil
	}
	d, sb, name := m.d, r.sandbox, r.session
	return m.call("sending to "+sb+"/"+name, func(ctx context.Context) doneMsg {
		if err := d.SendToSession(ctx, sb, name, text); err != nil {
			return doneMsg{err: fmt.Errorf("send to %s/%s: %w", sb, name, err)}
		}
		return doneMsg{info: "sent to " + sb + "/" + name}
	})
}

// fork is not offered: the daemon's API has no fork of a conversation yet.
func (m *Model) fork(r row) tea.Cmd {
	if r.kind != rowSession {
		m.errLine = "select a session to fork its conversation"
		return nil
	}
	d, sb, from := m.d, r.sandbox, r.session
	name := from + "-fork"
	taken := map[string]bool{}
	for _, s := range m.sessions[sb] {
		taken[s.Name] = true
	}
	for i := 2; taken[name]; i++ {
		name = fmt.Sprintf("%s-fork%d", from, i)
	}
	return m.call("forking "+sb+"/"+from, func(ctx context.Context) doneMsg {
		done := doneMsg{refresh: []string{sb}}
		if _, err := d.CreateSession(ctx, sb, wire.SessionCreateRequest{Name: name, ForkOf: from}, 60*time.Second); err != nil {
			done.err = fmt.Errorf("fork %s/%s: %w", sb, from, err)
			return done
		}
		done.info = fmt.Sprintf("forked %s/%s into %s/%s: enter attaches", sb, from, sb, name)
		return done
	})
}
