package store

import (
	"context"
	"time"
)

// SyncRecord is one recorded sync.
type SyncRecord struct {
	ID        int64
	SandboxID string
	Time      time.Time
	// Result is the JSON of what the sync fetched.
	Result string
}

// AddSync records a sync.
func (s *Store) AddSync(ctx context.Context, sandboxID, result string) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO syncs (sandbox_id, time, result) VALUES (?,?,?)", sandboxID, now(), result)
	return err
}

// Syncs lists a sandbox's syncs, oldest first.
func (s *Store) Syncs(ctx context.Context, sandboxID string) ([]SyncRecord, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, sandbox_id, time, result FROM syncs WHERE sandbox_id = ? ORDER BY id", sandboxID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SyncRecord
	for rows.Next() {
		var r SyncRecord
		var t int64
		if err := rows.Scan(&r.ID, &r.SandboxID, &t, &r.Result); err != nil {
			return nil, err
		}
		r.Time = time.Unix(0, t)
		out = append(out, r)
	}
	return out, rows.Err()
}
