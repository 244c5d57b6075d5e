package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Event is one thing that happened, as the daemon records it and the API streams it.
type Event struct {
	// Seq orders events; it is the row of the daemon's events table, so a client
	// resumes after the last seq it saw.
	Seq  int64     `json:"seq,omitempty"`
	Time time.Time `json:"time,omitzero"`
	// Sandbox is the sandbox's name.
	Sandbox string `json:"sandbox,omitempty"`
	// Session is the session it concerns, if any.
	Session string `json:"session,omitempty"`
	// Kind says what happened: created, started, stopped, removed, session-started,
	// session-restarted, session-removed, session-status, session-exited, port-open,
	// port-closed, branch-moved, synced, sync-failed, egress-denied (docs/api.md).
	Kind string `json:"kind,omitempty"`
	// Detail is a one-line summary for people.
	Detail string `json:"detail,omitempty"`
	// Attrs are the kind's fields, for programs.
	Attrs map[string]string `json:"attrs,omitempty"`
}

// Point is a place in the event history: after a seq, or at a time.
type Point struct {
	// Seq, when not zero, means the events after this seq.
	Seq int64
	// Time, when not zero, means the events from this time on (or up to it, for an end).
	Time time.Time
}

// ParsePoint reads a place in the history as `paddock events` and GET /v1/events take
// it: a duration back from now ("90s", "1h", "2h30m"), a time (RFC 3339, or a date and
// time in the local zone: "2006-01-02 15:04:05", "2006-01-02"), or a seq (a plain
// number). allowSeq is false for an end, which must be a time.
func ParsePoint(s string, now time.Time, allowSeq bool) (Point, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Point{}, errors.New("empty")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if !allowSeq || n < 0 {
			return Point{}, fmt.Errorf("%q: give a duration (1h) or a time (2006-01-02T15:04:05Z)", s)
		}
		return Point{Seq: n}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return Point{}, fmt.Errorf("%q: a duration back from now cannot be negative", s)
		}
		return Point{Time: now.Add(-d)}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return Point{Time: t}, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return Point{Time: t}, nil
		}
	}
	what := "a duration (1h), a time (2006-01-02T15:04:05Z)"
	if allowSeq {
		what += " or a seq"
	}
	return Point{}, fmt.Errorf("%q is not %s", s, what)
}

// EventsQuery selects what Events streams.
type EventsQuery struct {
	// Sandbox keeps the events of one sandbox (by name).
	Sandbox string
	// Since sends the stored events first: from a duration back ("1h"), a time (RFC 3339)
	// or after a seq. Empty sends only new events.
	Since string
	// Until ends the stream after the stored events up to a duration back ("0s": now)
	// or a time.
	Until string
	// NoFollow ends the stream after the stored events.
	NoFollow bool
	// Last sends the newest Last stored events first, when Since is empty.
	Last int
}

// EventLine is one line of GET /v1/events as NDJSON (or one SSE data field): an event,
// or, as the last line, an error with the seq to resume after (the stream fell behind).
type EventLine struct {
	Event
	Error *ErrorBody `json:"error,omitempty"`
}
