package store

import (
	"context"
	"fmt"
	"time"
)

// Alarm is a recorded alarm: an agent went for its own controls (internal/alarm).
type Alarm struct {
	ID        int64
	SandboxID string
	// Sandbox is the sandbox's name when it was raised.
	Sandbox string
	Session string
	Time    time.Time
	Kind    string
	Source  string
	Detail  string
	// Cleared is when the user acknowledged it; zero while it stands.
	Cleared time.Time
}

// MaxStandingAlarms bounds the standing alarms of a sandbox: an agent that writes
// control files by the thousand (a hook under each of many names) raises the first ones
// and is flagged; the rest would only grow the database and the notifications.
const MaxStandingAlarms = 100

// AddAlarm records a standing alarm, and reports false (recording nothing) when the same
// finding of the sandbox already stands, or MaxStandingAlarms of it do.
func (s *Store) AddAlarm(ctx context.Context, a Alarm) (Alarm, bool, error) {
	if a.Time.IsZero() {
		a.Time = time.Now()
	}
	var same, standing int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(CASE WHEN kind = ? AND detail = ? THEN 1 END), COUNT(*) FROM alarms WHERE sandbox_id = ? AND cleared = 0",
		a.Kind, a.Detail, a.SandboxID).Scan(&same, &standing); err != nil {
		return a, false, fmt.Errorf("read alarms of %q: %w", a.Sandbox, err)
	}
	if same > 0 || standing >= MaxStandingAlarms {
		return a, false, nil
	}
	res, err := s.db.ExecContext(ctx, "INSERT INTO alarms (sandbox_id, sandbox, session, time, kind, source, detail) VALUES (?,?,?,?,?,?,?)",
		a.SandboxID, a.Sandbox, a.Session, a.Time.UnixNano(), a.Kind, a.Source, a.Detail)
	if err != nil {
		return a, false, fmt.Errorf("record an alarm of %q: %w", a.Sandbox, err)
	}
	a.ID, err = res.LastInsertId()
	return a, err == nil, err
}

// Alarms lists the alarms of a sandbox (by id; "" for every sandbox), oldest first: the
// standing ones, and the cleared ones too when all is true.
func (s *Store) Alarms(ctx context.Context, sandboxID string, all bool) ([]Alarm, error) {
	q := "SELECT id, sandbox_id, sandbox, session, time, kind, source, detail, cleared FROM alarms WHERE (? = '' OR sandbox_id = ?)"
	if !all {
		q += " AND cleared = 0"
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY id", sandboxID, sandboxID)
	if err != nil {
		return nil, fmt.Errorf("read alarms: %w", err)
	}
	defer rows.Close()
	var out []Alarm
	for rows.Next() {
		var a Alarm
		var t, cleared int64
		if err := rows.Scan(&a.ID, &a.SandboxID, &a.Sandbox, &a.Session, &t, &a.Kind, &a.Source, &a.Detail, &cleared); err != nil {
			return nil, err
		}
		a.Time = time.Unix(0, t)
		if cleared != 0 {
			a.Cleared = time.Unix(0, cleared)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// StandingAlarms counts the standing alarms of each sandbox, by sandbox id.
func (s *Store) StandingAlarms(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT sandbox_id, COUNT(*) FROM alarms WHERE cleared = 0 GROUP BY sandbox_id")
	if err != nil {
		return nil, fmt.Errorf("count alarms: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

// ClearAlarms acknowledges the standing alarms of a sandbox (by id): all of them when
// id is 0, else the one alarm. It returns how many it cleared.
func (s *Store) ClearAlarms(ctx context.Context, sandboxID string, id int64) (int64, error) {
	res, err := s.db.ExecContext(ctx, "UPDATE alarms SET cleared = ? WHERE sandbox_id = ? AND cleared = 0 AND (? = 0 OR id = ?)",
		time.Now().UnixNano(), sandboxID, id, id)
	if err != nil {
		return 0, fmt.Errorf("clear alarms: %w", err)
	}
	return res.RowsAffected()
}
