package store

import (
	"context"
	"time"
)

// AuditEntry is one line of the audit log: who did what, to which sandbox, when, from
// where, and what the daemon answered.
type AuditEntry struct {
	ID   int64
	Time time.Time
	// Who is a GitHub login, "token NAME" (a token of the daemon's host), "browser" (a
	// browser signed in with a login URL of `paddock web`) or "local" (the unix socket).
	Who    string
	UserID int64
	// Action is the API route ("POST /v1/sandboxes/{name}/start") or a sign-in event
	// ("sign-in", "sign-in refused", "membership revoked"...).
	Action  string
	Sandbox string
	// Status is the HTTP status answered; 0 for events that are not requests.
	Status int
	Detail string
	Remote string
}

// AuditKeep is how many entries the audit log keeps: older ones are dropped as new ones
// come, so that no client can fill the disk through it.
const AuditKeep = 100000

// AddAudit appends an entry; now and then it drops the entries beyond AuditKeep.
func (s *Store) AddAudit(ctx context.Context, e AuditEntry) error {
	res, err := s.db.ExecContext(ctx, "INSERT INTO audit (time, who, user_id, action, sandbox, status, detail, remote) VALUES (?,?,?,?,?,?,?,?)",
		e.Time.UnixNano(), e.Who, e.UserID, e.Action, e.Sandbox, e.Status, e.Detail, e.Remote)
	if err != nil {
		return err
	}
	if id, err := res.LastInsertId(); err == nil && id%1000 == 0 {
		_, err = s.db.ExecContext(ctx, "DELETE FROM audit WHERE id <= ?", id-AuditKeep)
		return err
	}
	return nil
}

// Audit returns the entries since a time (zero: all kept), oldest first, at most limit
// of the newest (0: no bound).
func (s *Store) Audit(ctx context.Context, since time.Time, limit int) ([]AuditEntry, error) {
	from := int64(0)
	if !since.IsZero() {
		from = since.UnixNano()
	}
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT * FROM (SELECT id, time, who, user_id, action, sandbox, status, detail, remote
		FROM audit WHERE time >= ? ORDER BY id DESC LIMIT ?) ORDER BY id`, from, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var t int64
		if err := rows.Scan(&e.ID, &t, &e.Who, &e.UserID, &e.Action, &e.Sandbox, &e.Status, &e.Detail, &e.Remote); err != nil {
			return nil, err
		}
		e.Time = time.Unix(0, t)
		out = append(out, e)
	}
	return out, rows.Err()
}
