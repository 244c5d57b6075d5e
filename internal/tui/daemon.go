package tui

// The TUI's calls to the daemon, each run off the UI goroutine as a tea.Cmd.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// loadAll reads the listing: every sandbox, and the sessions of each (8 sandboxes at once).
func (m *Model) loadAll() tea.Cmd {
	ctx := m.ctx
	d := m.d
	return func() tea.Msg {
		list, err := d.List(ctx)
		if err != nil {
			return listedMsg{err: err}
		}
		out := listedMsg{sandboxes: list, sessions: map[string][]wire.SessionInfo{}, runs: map[string][]wire.Run{}}
		if runs, err := d.Runs(ctx, ""); err == nil { // a daemon that keeps no runs shows none
			for _, r := range runs {
				out.runs[r.Sandbox] = append(out.runs[r.Sandbox], r)
			}
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for _, sb := range list {
			wg.Add(1)
			go func(name string) {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				ss, err := d.Sessions(ctx, name)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					out.err = fmt.Errorf("sessions of %s: %w", name, err)
					return
				}
				out.sessions[name] = ss
			}(sb.Name)
		}
		wg.Wait()
		return out
	}
}

// streamEvents runs the daemon's event stream in the background, handing events to the
// UI through evch; it resumes after since (a seq) when given.
func (m *Model) streamEvents(since string) tea.Cmd {
	ctx, d, ch := m.ctx, m.d, m.evch
	return func() tea.Msg {
		go func() {
			q := wire.EventsQuery{Since: since}
			if since == "" {
				q.Since = "10s" // what happened while the listing was read
			}
			err := d.Events(ctx, q, func(ev wire.Event) error {
				select {
				case ch <- eventsMsg{ev}:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if ctx.Err() == nil {
				select {
				case ch <- streamEndMsg{err}:
				case <-ctx.Done():
				}
			}
		}()
		return nil
	}
}

// waitEvents takes the next message from the stream, with every one already waiting, so a
// burst is drawn once.
func (m *Model) waitEvents() tea.Cmd {
	ch, ctx := m.evch, m.ctx
	return func() tea.Msg {
		var first tea.Msg
		select {
		case first = <-ch:
		case <-ctx.Done():
			return nil
		}
		batch, ok := first.(eventsMsg)
		if !ok {
			return first
		}
		for len(batch) < 512 {
			select {
			case next := <-ch:
				nb, ok := next.(eventsMsg)
				if !ok {
					// Put it back for the next wait: it ends the stream.
					go func() { ch <- next }()
					return batch
				}
				batch = append(batch, nb...)
			default:
				return batch
			}
		}
		return batch
	}
}

// refreshSandbox reads one sandbox and its sessions again.
func (m *Model) refreshSandbox(name string) tea.Cmd {
	ctx, d := m.ctx, m.d
	return func() tea.Msg {
		info, err := d.Get(ctx, name)
		if err != nil {
			if isNotFound(err) {
				return sandboxMsg{name: name, gone: true}
			}
			return sandboxMsg{name: name, err: err}
		}
		out := sandboxMsg{name: name, info: info}
		out.sessions, out.err = d.Sessions(ctx, name)
		out.runs, _ = d.Runs(ctx, name)
		return out
	}
}

// readRun reads a run's steps, for the preview.
func (m *Model) readRun(id string) tea.Cmd {
	ctx, d := m.ctx, m.d
	return func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		detail, err := d.Run(cctx, id)
		return runMsg{detail: detail, err: err}
	}
}

func isNotFound(err error) bool { return apperr.KindOf(err) == apperr.KindNotFound }

// call runs fn off the UI goroutine with a spinner saying what; its doneMsg lands in Update.
func (m *Model) call(what string, fn func(ctx context.Context) doneMsg) tea.Cmd {
	m.nextCall++
	id := m.nextCall
	m.busy[id] = what
	m.errLine = ""
	ctx := m.ctx
	return tea.Batch(func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		msg := fn(cctx)
		msg.id = id
		return msg
	}, m.spinCmd())
}

// spinCmd starts the spinner's ticks unless they run; they stop when nothing waits.
func (m *Model) spinCmd() tea.Cmd {
	if m.spinning {
		return nil
	}
	m.spinning = true
	return m.spin.Tick
}

// readTranscript reads a session's conversation, for its line and the preview; at most
// cap(sem) reads run at once.
func (m *Model) readTranscript(sb, name string) tea.Cmd {
	ctx, d, sem := m.ctx, m.d, m.sem
	return func() tea.Msg {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		defer func() { <-sem }()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		entries, err := d.Transcript(cctx, sb, name)
		if isNotFound(err) {
			err = nil // no conversation yet (a session starting): nothing to show, no error
		}
		return transcriptMsg{key: sb + "/" + name, entries: entries, err: err}
	}
}

// readScreen reads what a session's pane shows.
func (m *Model) readScreen(sb, name string) tea.Cmd {
	ctx, d, sem := m.ctx, m.d, m.sem
	st := m.sandboxes[sb].State
	return func() tea.Msg {
		key := sb + "/" + name
		if st != "running" {
			return screenMsg{key: key}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		defer func() { <-sem }()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var out strings.Builder
		code, err := d.Exec(cctx, sb, wire.ExecRequest{Argv: []string{"tmux", "-S", wire.SessionSocket, "capture-pane", "-p", "-t", "=" + name + ":"}},
			wire.ExecIO{Stdout: &out})
		if err == nil && code != 0 {
			err = fmt.Errorf("capture-pane exited with %d", code)
		}
		return screenMsg{key: key, text: out.String(), err: err}
	}
}

// readAllTranscripts reads the conversation of every listed session, for their lines.
func (m *Model) readAllTranscripts() tea.Cmd {
	var cmds []tea.Cmd
	for sb, list := range m.sessions {
		for _, se := range list {
			cmds = append(cmds, m.readTranscript(sb, se.Name))
		}
	}
	return tea.Batch(cmds...)
}

// lastSaid is a conversation's last line worth showing in the list.
func lastSaid(entries []wire.TranscriptEntry) string {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		var text string
		switch e.Kind {
		case wire.EntryAssistant:
			text = e.Text
		case wire.EntryUser:
			text = "› " + e.Text
		case wire.EntryToolCall:
			text = e.Tool + " " + e.InputText()
		default:
			continue
		}
		text = strings.TrimSpace(text)
		if j := strings.IndexByte(text, '\n'); j >= 0 {
			text = text[:j]
		}
		if len(text) > 300 {
			text = text[:300]
		}
		return text
	}
	return ""
}
