package store

import (
	"context"
	"database/sql"
	"errors"
)

// SetRecordHead keeps the head (last seq and hash) of a sandbox's flight record.
func (s *Store) SetRecordHead(ctx context.Context, sandbox string, seq int64, hash string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO record_heads (sandbox, seq, hash) VALUES (?,?,?)
		ON CONFLICT(sandbox) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`, sandbox, seq, hash)
	return err
}

// RecordHead returns the head kept of a sandbox's flight record; ok is false when none is.
func (s *Store) RecordHead(ctx context.Context, sandbox string) (seq int64, hash string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, "SELECT seq, hash FROM record_heads WHERE sandbox = ?", sandbox).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", false, nil
	}
	return seq, hash, err == nil, err
}

// RecordHeads returns the names of every sandbox with a flight record.
func (s *Store) RecordHeads(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT sandbox FROM record_heads ORDER BY sandbox")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
