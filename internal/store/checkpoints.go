package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// ErrNoCheckpoint is returned for a checkpoint the store does not hold.
var ErrNoCheckpoint = errors.New("no such checkpoint")

// NextCheckpointSeq is the sequence number the sandbox's next checkpoint takes: one
// past the highest it ever had (a pruned checkpoint's number is not reused while a
// later one is kept).
func (s *Store) NextCheckpointSeq(ctx context.Context, sandboxID string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE sandbox_id = ?", sandboxID).Scan(&n)
	return n, err
}

// AddCheckpoint records a checkpoint of a sandbox; it fails if one of its sequence
// number exists.
func (s *Store) AddCheckpoint(ctx context.Context, sandboxID string, c wire.Checkpoint) error {
	doc, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, "INSERT INTO checkpoints (sandbox_id, seq, session, name, doc) VALUES (?,?,?,?,?)",
		sandboxID, c.Seq, c.Session, c.Name, string(doc))
	return err
}

// PutCheckpoint replaces the record of a checkpoint (a name given later).
func (s *Store) PutCheckpoint(ctx context.Context, sandboxID string, c wire.Checkpoint) error {
	doc, err := json.Marshal(c)
	if err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, "UPDATE checkpoints SET session = ?, name = ?, doc = ? WHERE sandbox_id = ? AND seq = ?",
		c.Session, c.Name, string(doc), sandboxID, c.Seq)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("checkpoint #%d: %w", c.Seq, ErrNoCheckpoint)
	}
	return nil
}

// ListCheckpoints returns a sandbox's checkpoints, the oldest first: every one, or
// with session, that session's and those of no session.
func (s *Store) ListCheckpoints(ctx context.Context, sandboxID, session string) ([]wire.Checkpoint, error) {
	return listDocs[wire.Checkpoint](ctx, s.db, "checkpoint",
		"SELECT seq, doc FROM checkpoints WHERE sandbox_id = ? AND (? = '' OR session = ? OR session = '') ORDER BY seq",
		sandboxID, session, session)
}

// DeleteCheckpoint forgets a checkpoint of a sandbox.
func (s *Store) DeleteCheckpoint(ctx context.Context, sandboxID string, seq int) error {
	_, err := s.db.ExecContext(ctx, "DELETE FROM checkpoints WHERE sandbox_id = ? AND seq = ?", sandboxID, seq)
	return err
}
