package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/events/eventlog"
	"github.com/paddockhq/paddock/internal/store"
)

// EventLine is wire.EventLine.
type EventLine = wire.EventLine

const (
	// eventsPage is how many stored events are read at a time.
	eventsPage = 1000
	// sseKeepalive is how often an idle SSE stream sends a comment, so that proxies and
	// browsers keep it open.
	sseKeepalive = 15 * time.Second
)

// eventsRequest is a parsed GET /v1/events.
type eventsRequest struct {
	sandbox string
	// history is whether stored events are sent first, those matching query.
	history bool
	// last, with no since, asks for the newest last stored events first.
	last   int
	query  store.EventQuery
	follow bool
	sse    bool
}

func parseEventsRequest(r *http.Request, now time.Time) (eventsRequest, error) {
	q := r.URL.Query()
	er := eventsRequest{sandbox: q.Get("sandbox"), follow: true}
	er.query.Sandbox = er.sandbox
	er.sse = strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	since := q.Get("since")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		since = id // an EventSource resuming
	}
	if since != "" {
		p, err := events.ParsePoint(since, now, true)
		if err != nil {
			return er, apperr.Invalid("give since as a duration (1h), a time (RFC 3339) or a seq", "since: %v", err)
		}
		er.history, er.query.AfterSeq, er.query.Since = true, p.Seq, p.Time
	}
	if l := q.Get("last"); l != "" && since == "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return er, apperr.Invalid("give last as a number of events", "last: %q is not a number of events", l)
		}
		er.last, er.history = n, n > 0
	}
	if until := q.Get("until"); until != "" {
		p, err := events.ParsePoint(until, now, false)
		if err != nil {
			return er, apperr.Invalid("give until as a duration (10m) or a time (RFC 3339)", "until: %v", err)
		}
		er.history, er.follow, er.query.Until = true, false, p.Time
	}
	if f := q.Get("follow"); f != "" {
		follow, err := strconv.ParseBool(f)
		if err != nil {
			return er, apperr.Invalid("", "follow: %q is not true or false", f)
		}
		er.follow = er.follow && follow
		if !follow {
			er.history = true
		}
	}
	return er, nil
}

// streamEvents serves GET /v1/events: the stored events asked for (since, until), then,
// unless until is given or follow=false, each new event as it is recorded, until the
// client goes away. Once the response's headers are sent, no later event can be missed.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	er, err := parseEventsRequest(r, time.Now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st := s.svc.Store()
	keep := s.eventFilter(ctx)
	if er.sandbox != "" {
		if _, err := s.svc.Record(ctx, er.sandbox); err != nil {
			// A removed sandbox's history stays readable, by admins.
			if has, herr := st.HasEvents(ctx, er.sandbox); herr != nil || !has || !isAdmin(ctx) {
				s.writeError(w, r, err) // no such sandbox, now or in the history
				return
			}
		}
	}
	var sub *events.Subscription
	if er.follow {
		// Subscribed before the history is read: an event recorded in between is in
		// both, and the seq tells.
		sub = s.svc.Events().Subscribe(0, func(ev events.Event) bool { return (er.sandbox == "" || ev.Sandbox == er.sandbox) && keep(ev) })
		defer func() { sub.Close() }()
	}
	// Every event after newest reaches the subscription: the place to resume from, when
	// the stream is cut, is the later of it and the last event sent.
	newest, err := st.LastEventSeq(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if er.last > 0 {
		if er.query.AfterSeq, err = st.SeqBeforeLast(ctx, er.sandbox, er.last); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	out := newEventWriter(w, er.sse)
	var sent int64
	if er.history {
		if sent, err = writeHistory(ctx, st, er.query, out, keep); err != nil {
			s.log.Warn("events: read the history", "err", err)
			return
		}
	}
	if !er.follow {
		return
	}
	keepalive := time.NewTicker(sseKeepalive)
	defer keepalive.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-keepalive.C:
			if er.sse && out.comment("keepalive") != nil {
				return
			}
		case ev, ok := <-sub.C():
			if !ok {
				// Dropped for falling behind: what it held is sent, then where to resume.
				out.dropped(max(newest, sent))
				return
			}
			if ev.Seq <= sent {
				continue // sent with the history already
			}
			sent = ev.Seq
			if out.event(ev) != nil || out.flush() != nil {
				return
			}
		}
	}
}

// writeHistory sends the stored events matching q, a page at a time, and returns the
// seq of the last one sent (0 when none matched).
func writeHistory(ctx context.Context, st *store.Store, q store.EventQuery, out *eventWriter, keep func(events.Event) bool) (int64, error) {
	q.Limit = eventsPage
	var sent int64
	for {
		page, err := st.Events(ctx, q)
		if err != nil {
			return 0, err
		}
		for _, e := range page {
			q.AfterSeq = e.Seq
			if ev := eventlog.FromStore(e); keep(ev) {
				if err := out.event(ev); err != nil {
					return 0, err
				}
				sent = e.Seq
			}
		}
		if err := out.flush(); err != nil {
			return 0, err
		}
		if len(page) < eventsPage {
			return sent, nil
		}
	}
}

// eventWriter writes events as NDJSON or as Server-Sent Events.
type eventWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	sse bool
}

func newEventWriter(w http.ResponseWriter, sse bool) *eventWriter {
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	out := &eventWriter{w: w, rc: http.NewResponseController(w), sse: sse}
	out.flush()
	return out
}

func (o *eventWriter) flush() error { return o.rc.Flush() }

// event writes one event; flush sends what was written.
func (o *eventWriter) event(ev events.Event) error {
	data, _ := json.Marshal(EventLine{Event: ev})
	var err error
	if o.sse {
		_, err = fmt.Fprintf(o.w, "id: %d\ndata: %s\n\n", ev.Seq, data)
	} else {
		_, err = fmt.Fprintf(o.w, "%s\n", data)
	}
	return err
}

func (o *eventWriter) comment(text string) error {
	if _, err := fmt.Fprintf(o.w, ": %s\n\n", text); err != nil {
		return err
	}
	return o.rc.Flush()
}

// dropped ends a stream that fell behind with an error line naming the seq to resume
// after.
func (o *eventWriter) dropped(last int64) {
	var b ErrorBody
	b.Error.Kind = apperr.KindUnavailable
	b.Error.Message = "the event stream fell behind and was cut"
	b.Error.Hint = fmt.Sprintf("resume with since=%d", last)
	data, _ := json.Marshal(EventLine{Event: events.Event{Seq: last}, Error: &b})
	if o.sse {
		fmt.Fprintf(o.w, "event: error\ndata: %s\n\n", data)
	} else {
		fmt.Fprintf(o.w, "%s\n", data)
	}
	o.rc.Flush()
}
