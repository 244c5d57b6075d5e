package tui

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// watchWriter is the program's terminal: it tells when text has been written since the
// last expect.
type watchWriter struct {
	mu     sync.Mutex
	buf    []byte
	marker []byte
	hit    chan struct{}
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.marker == nil {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if bytes.Contains(w.buf, w.marker) {
		w.marker = nil
		close(w.hit)
	}
	return len(p), nil
}

func (w *watchWriter) expect(text string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf, w.marker, w.hit = w.buf[:0], []byte(text), make(chan struct{})
	return w.hit
}

// fleet is a daemon with n sandboxes of per sessions each, spread over n/5 projects.
func fleet(n, per int) *fakeDaemon {
	f := newFake()
	now := time.Now()
	for i := range n {
		var ss []wire.SessionInfo
		for j := range per {
			st := []string{"working", "waiting", "idle", "exited"}[(i+j)%4]
			ss = append(ss, wire.SessionInfo{Name: fmt.Sprintf("w%03d-s%d", i, j), Agent: "claude", Status: st,
				LastActivity: now.Add(-time.Duration(i*j) * time.Minute)})
		}
		f.addSandbox(fmt.Sprintf("sb%03d", i), fmt.Sprintf("/src/project-%02d", i/5), "running", ss...)
	}
	return f
}

const benchW, benchH = 160, 50

// lastVisible is the name of the bottom row of the first full frame of f's list.
func lastVisible(f *fakeDaemon) string {
	m := New(context.Background(), Options{Daemon: f})
	defer m.Close()
	m.width, m.height = benchW, benchH
	list, _ := f.List(context.Background())
	for _, sb := range list {
		m.sandboxes[sb.Name] = sb
		m.sessions[sb.Name], _ = f.Sessions(context.Background(), sb.Name)
	}
	m.relayout()
	r := m.rows[min(len(m.rows), m.listHeight())-1]
	if r.kind == rowSession {
		return r.session + " "
	}
	return r.sandbox + " "
}

// run starts the TUI on w and returns a function that quits it.
func runProgram(b *testing.B, f *fakeDaemon, w *watchWriter) (*Model, func()) {
	m := New(context.Background(), Options{Daemon: f})
	p := tea.NewProgram(m, tea.WithInput(nil), tea.WithOutput(w), tea.WithWindowSize(benchW, benchH), tea.WithoutSignals())
	done := make(chan struct{})
	go func() {
		if _, err := p.Run(); err != nil {
			b.Error(err)
		}
		close(done)
	}()
	return m, func() {
		p.Quit()
		<-done
		m.Close()
	}
}

func waitHit(b *testing.B, hit <-chan struct{}, what string) {
	select {
	case <-hit:
	case <-time.After(10 * time.Second):
		b.Fatalf("%s never reached the screen", what)
	}
}

// BenchmarkTUIFirstFrame measures the TUI from its start to the first frame that shows the
// whole listing of 50 sandboxes and 200 sessions (the daemon answering at once: what is
// measured is the TUI's own work). The baseline, in the same run, is one sandbox with one
// session.
func BenchmarkTUIFirstFrame(b *testing.B) {
	big, small := fleet(50, 4), fleet(1, 1)
	bigMark, smallMark := lastVisible(big), lastVisible(small)
	var full, base []time.Duration
	measure := func(f *fakeDaemon, mark string) time.Duration {
		w := &watchWriter{}
		hit := w.expect(mark)
		start := time.Now()
		_, quit := runProgram(b, f, w)
		waitHit(b, hit, mark)
		d := time.Since(start)
		quit()
		return d
	}
	measure(big, bigMark) // warm up
	b.ResetTimer()
	for range b.N {
		full = append(full, measure(big, bigMark))
		base = append(base, measure(small, smallMark))
	}
	b.StopTimer()
	report(b, full, base, "frame")
}

// BenchmarkTUIEventToScreen measures an event from the daemon's stream to the screen: a
// session's status event, on which the TUI reads the session's conversation and shows its
// last words on the session's line, with 50 sandboxes and 200 sessions listed. The baseline, in the same run, is the same with one session.
func BenchmarkTUIEventToScreen(b *testing.B) {
	big, small := fleet(50, 4), fleet(1, 1)
	type target struct {
		f    *fakeDaemon
		w    *watchWriter
		quit func()
	}
	start := func(f *fakeDaemon) target {
		w := &watchWriter{}
		hit := w.expect(lastVisible(f))
		_, quit := runProgram(b, f, w)
		waitHit(b, hit, "the listing")
		return target{f, w, quit}
	}
	tb, ts := start(big), start(small)
	defer tb.quit()
	defer ts.quit()
	seq := int64(0)
	send := func(t target) time.Duration {
		seq++
		// Every character differs from the last detail's, so the renderer, which writes
		// only the cells that change, writes it whole.
		detail := strings.Repeat(string(rune('a'+seq%26)), 12)
		hit := t.w.expect(detail)
		begin := time.Now()
		// The agent's last words, which the TUI reads on the event and shows on the line.
		t.f.mu.Lock()
		t.f.transcript["sb000/w000-s0"] = []wire.TranscriptEntry{{Kind: wire.EntryAssistant, Text: detail}}
		t.f.mu.Unlock()
		t.f.publish(wire.Event{Seq: seq, Time: time.Now(), Sandbox: "sb000", Session: "w000-s0", Kind: "session-status",
			Detail: detail, Attrs: map[string]string{"status": []string{"working", "idle"}[seq%2]}})
		waitHit(b, hit, detail)
		return time.Since(begin)
	}
	send(tb)
	send(ts)
	var full, base []time.Duration
	b.ResetTimer()
	for range b.N {
		full = append(full, send(tb))
		base = append(base, send(ts))
	}
	b.StopTimer()
	report(b, full, base, "event")
}

func report(b *testing.B, full, base []time.Duration, unit string) {
	q := func(ds []time.Duration, p float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	b.ReportMetric(ms(q(full, 0.5)), "ms-median/"+unit)
	b.ReportMetric(ms(q(full, 0.95)), "ms-p95/"+unit)
	b.ReportMetric(ms(q(base, 0.5)), "baseline-ms-median/"+unit)
	b.ReportMetric(float64(q(full, 0.5))/float64(q(base, 0.5)), "x-baseline")
}
