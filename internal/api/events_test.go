package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/proxy/keyring"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/store"
)

// eventsTest is the real API handler over a real store (no backends), served on a unix
// socket as the daemon serves it, with the Go client.
type eventsTest struct {
	t      *testing.T
	svc    *sandbox.Service
	client *client.Client
	socket string
	a, b   store.Sandbox

	mu       sync.Mutex
	requests int // GET /v1/events requests served
}

func newEventsTest(t *testing.T) *eventsTest {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.DiscardHandler)
	svc := sandbox.New(sandbox.Options{Store: st, Backends: map[string]backend.Backend{}, Logger: log})
	et := &eventsTest{t: t, svc: svc, socket: filepath.Join(dir, "api.sock"),
		a: store.Sandbox{ID: "id-a", Name: "a", Backend: "bwrap", State: "running"},
		b: store.Sandbox{ID: "id-b", Name: "b", Backend: "bwrap", State: "running"}}
	for _, sb := range []store.Sandbox{et.a, et.b} {
		if err := st.CreateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("unix", et.socket)
	if err != nil {
		t.Fatal(err)
	}
	h := NewServer(svc, session.New(svc, keyring.New(nil), log), Services{Keys: keyring.New(nil), Net: svc.Net()}, Version{}, log, func() {}).Handler()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/events" {
			et.mu.Lock()
			et.requests++
			et.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	et.client = client.NewClient(et.socket)
	return et
}

func (et *eventsTest) emit(sb store.Sandbox, kind, session string) {
	et.svc.Emit(context.Background(), sb, events.Event{Kind: kind, Session: session, Detail: kind + " " + session,
		Attrs: map[string]string{"status": "idle"}})
}

// collect runs Client.Events in the background and hands over each event.
func (et *eventsTest) collect(ctx context.Context, q EventsQuery) (<-chan events.Event, <-chan error) {
	ch := make(chan events.Event, 16)
	errc := make(chan error, 1)
	go func() {
		defer close(ch)
		errc <- et.client.Events(ctx, q, func(ev events.Event) error {
			ch <- ev
			return nil
		})
	}()
	return ch, errc
}

func receive(t *testing.T, ch <-chan events.Event) events.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	return events.Event{}
}

// TestEventsStreamNDJSON streams the stored events of one sandbox, then live ones, and
// none of the other sandbox's.
func TestEventsStreamNDJSON(t *testing.T) {
	et := newEventsTest(t)
	et.emit(et.a, "created", "")
	et.emit(et.b, "created", "")
	et.emit(et.a, "session-status", "worker")

	ctx, cancel := context.WithCancel(t.Context())
	ch, errc := et.collect(ctx, EventsQuery{Sandbox: "a", Since: "1h"})
	first, second := receive(t, ch), receive(t, ch)
	if first.Kind != "created" || second.Kind != "session-status" || second.Session != "worker" ||
		second.Attrs["status"] != "idle" || second.Detail != "session-status worker" || second.Sandbox != "a" {
		t.Fatalf("history: %+v, %+v", first, second)
	}
	if second.Seq <= first.Seq || time.Since(first.Time) > time.Minute {
		t.Errorf("seq %d then %d, time %v", first.Seq, second.Seq, first.Time)
	}

	et.emit(et.b, "stopped", "")
	et.emit(et.a, "stopped", "")
	live := receive(t, ch)
	if live.Sandbox != "a" || live.Kind != "stopped" || live.Seq <= second.Seq {
		t.Errorf("live event %+v", live)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Events after cancel: %v", err)
	}
}

// TestEventsHistoryOnly ends after the stored events with until or without following.
func TestEventsHistoryOnly(t *testing.T) {
	et := newEventsTest(t)
	et.emit(et.a, "created", "")
	et.emit(et.a, "started", "")
	for _, q := range []EventsQuery{{Since: "0", NoFollow: true}, {Since: "1h", Until: "0s"}, {NoFollow: true}} {
		var kinds []string
		err := et.client.Events(t.Context(), q, func(ev events.Event) error {
			kinds = append(kinds, ev.Kind)
			return nil
		})
		if err != nil || strings.Join(kinds, " ") != "created started" {
			t.Errorf("Events(%+v) = %v, %v", q, kinds, err)
		}
	}
	err := et.client.Events(t.Context(), EventsQuery{Since: "0", Until: "1h"}, func(ev events.Event) error {
		t.Errorf("an event later than until: %+v", ev)
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// TestEventsStreamSSE asks for Server-Sent Events and resumes with Last-Event-ID, as a
// browser's EventSource does.
func TestEventsStreamSSE(t *testing.T) {
	et := newEventsTest(t)
	et.emit(et.a, "created", "")
	et.emit(et.a, "started", "")
	et.emit(et.a, "session-started", "w")
	var seqs []int64
	et.client.Events(t.Context(), EventsQuery{Since: "0", NoFollow: true}, func(ev events.Event) error {
		seqs = append(seqs, ev.Seq)
		return nil
	})

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, et.client.Base+"/v1/events?sandbox=a", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", fmt.Sprint(seqs[0]))
	resp, err := et.client.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	type sse struct {
		id   string
		data EventLine
	}
	msgs := make(chan sse, 8)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		var m sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				m.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m.data)
			case line == "":
				msgs <- m
				m = sse{}
			}
		}
		close(msgs)
	}()
	next := func() sse {
		select {
		case m := <-msgs:
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("no message")
		}
		return sse{}
	}
	for _, want := range []struct {
		seq  int64
		kind string
	}{{seqs[1], "started"}, {seqs[2], "session-started"}} {
		m := next()
		if m.id != fmt.Sprint(want.seq) || m.data.Seq != want.seq || m.data.Kind != want.kind {
			t.Errorf("message id %s %+v, want seq %d %s", m.id, m.data.Event, want.seq, want.kind)
		}
	}
	et.emit(et.a, "stopped", "")
	if m := next(); m.data.Kind != "stopped" || m.id != fmt.Sprint(m.data.Seq) || m.data.Seq <= seqs[2] {
		t.Errorf("live message id %s %+v", m.id, m.data.Event)
	}
}

func TestEventsBadRequests(t *testing.T) {
	et := newEventsTest(t)
	tests := []struct {
		q    EventsQuery
		want string
	}{
		{EventsQuery{Since: "yesterday"}, `since: "yesterday" is not a duration`},
		{EventsQuery{Since: "1h", Until: "7"}, `until: "7"`},
		{EventsQuery{Sandbox: "ghost"}, `no sandbox named "ghost"`},
	}
	for _, tt := range tests {
		err := et.client.Events(t.Context(), tt.q, func(events.Event) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Events(%+v) = %v, want %q", tt.q, err, tt.want)
		}
	}
	// A removed sandbox's history is still there.
	et.emit(et.a, "removed", "")
	if err := et.svc.Store().DeleteSandbox(t.Context(), et.a.ID); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := et.client.Events(t.Context(), EventsQuery{Sandbox: "a", Since: "0", NoFollow: true}, func(events.Event) error { n++; return nil })
	if err != nil || n != 1 {
		t.Errorf("history of a removed sandbox: %d events, %v", n, err)
	}
}

// TestEventsSlowClientResumes has a client read nothing while many events are recorded:
// the daemon cuts its stream rather than wait, says where to resume, and the Go client
// resumes there, so every event arrives once and in order.
func TestEventsSlowClientResumes(t *testing.T) {
	et := newEventsTest(t)
	const total = 3 * events.DefaultBuffer
	release := make(chan struct{})
	var mu sync.Mutex
	var seqs []int64
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- et.client.Events(ctx, EventsQuery{Sandbox: "a"}, func(ev events.Event) error {
			if ev.Kind == "ready" {
				close(started)
				<-release // a client that reads nothing for a while
				return nil
			}
			mu.Lock()
			seqs = append(seqs, ev.Seq)
			n := len(seqs)
			mu.Unlock()
			if n == total {
				return errors.New("all here")
			}
			return nil
		})
	}()
	time.Sleep(100 * time.Millisecond) // subscribed
	et.emit(et.a, "ready", "")
	<-started
	payload := strings.Repeat("x", 400) // fills the socket's buffer sooner
	for range total {
		et.svc.Emit(t.Context(), et.a, events.Event{Kind: "port-open", Detail: payload})
	}
	close(release)
	select {
	case err := <-errc:
		if err == nil || err.Error() != "all here" {
			t.Fatalf("Events = %v after %d events", err, len(seqs))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("got %d of %d events", len(seqs), total)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("event %d has seq %d after %d: a gap or a repeat", i, seqs[i], seqs[i-1])
		}
	}
	et.mu.Lock()
	defer et.mu.Unlock()
	if et.requests < 2 {
		t.Errorf("the stream was never cut (%d requests): the test proves nothing", et.requests)
	}
}
