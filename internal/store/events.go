package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Event is one recorded happening.
type Event struct {
	Seq       int64
	SandboxID string
	// Sandbox is the sandbox's name when it happened.
	Sandbox string
	Session string
	Time    time.Time
	Kind    string
	// Message is the one-line summary for people.
	Message string
	Attrs   map[string]string
}

// AddEvent records an event; its Seq and Time (now, when zero) are filled in.
func (s *Store) AddEvent(ctx context.Context, ev Event) (Event, error) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	attrs := ""
	if len(ev.Attrs) > 0 {
		data, err := json.Marshal(ev.Attrs)
		if err != nil {
			return ev, err
		}
		attrs = string(data)
	}
	res, err := s.db.ExecContext(ctx, "INSERT INTO events (sandbox_id, sandbox, session, time, kind, message, attrs) VALUES (?,?,?,?,?,?,?)",
		ev.SandboxID, ev.Sandbox, ev.Session, ev.Time.UnixNano(), ev.Kind, ev.Message, attrs)
	if err != nil {
		return ev, fmt.Errorf("record event %s of %q: %w", ev.Kind, ev.Sandbox, err)
	}
	ev.Seq, err = res.LastInsertId()
	return ev, err
}

// EventQuery selects recorded events. Zero fields select everything.
type EventQuery struct {
	// Sandbox is a sandbox's name.
	Sandbox string
	// AfterSeq selects events with a greater seq.
	AfterSeq int64
	// Since and Until bound the events' time, both included.
	Since, Until time.Time
	// Limit caps how many events are returned (the oldest first).
	Limit int
}

// Events lists recorded events, oldest first.
func (s *Store) Events(ctx context.Context, q EventQuery) ([]Event, error) {
	var where []string
	var args []any
	if q.Sandbox != "" {
		where, args = append(where, "sandbox = ?"), append(args, q.Sandbox)
	}
	if q.AfterSeq > 0 {
		where, args = append(where, "seq > ?"), append(args, q.AfterSeq)
	}
	if !q.Since.IsZero() {
		where, args = append(where, "time >= ?"), append(args, q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		where, args = append(where, "time <= ?"), append(args, q.Until.UnixNano())
	}
	query := "SELECT seq, sandbox_id, sandbox, session, time, kind, message, attrs FROM events"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY seq"
	if q.Limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var t int64
		var attrs string
		if err := rows.Scan(&e.Seq, &e.SandboxID, &e.Sandbox, &e.Session, &t, &e.Kind, &e.Message, &attrs); err != nil {
			return nil, err
		}
		e.Time = time.Unix(0, t)
		if attrs != "" {
			if err := json.Unmarshal([]byte(attrs), &e.Attrs); err != nil {
				return nil, fmt.Errorf("event %d: attrs: %w", e.Seq, err)
			}
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// HasEvents reports whether any event of the named sandbox is recorded.
func (s *Store) HasEvents(ctx context.Context, sandbox string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM events WHERE sandbox = ?)", sandbox).Scan(&n)
	return n == 1, err
}

// PruneEvents deletes the oldest events beyond the newest keep, and returns how many went.
func (s *Store) PruneEvents(ctx context.Context, keep int) (int64, error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM events WHERE seq <= (SELECT seq FROM events ORDER BY seq DESC LIMIT 1 OFFSET ?)", keep)
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return res.RowsAffected()
}

// LastEventSeq is the seq of the newest event, or 0.
func (s *Store) LastEventSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(seq), 0) FROM events").Scan(&seq)
	return seq, err
}

// SeqBeforeLast is the seq after which the newest n events (of the named sandbox, or of
// all with none named) begin: a point to read them from, oldest first. It is 0 when there
// are n events or fewer.
func (s *Store) SeqBeforeLast(ctx context.Context, sandbox string, n int) (int64, error) {
	query, args := "SELECT seq FROM events", []any{}
	if sandbox != "" {
		query, args = query+" WHERE sandbox = ?", append(args, sandbox)
	}
	var seq int64
	err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MIN(seq), 1) - 1 FROM ("+query+" ORDER BY seq DESC LIMIT ?)", append(args, n)...).Scan(&seq)
	return seq, err
}
