package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// NetLearnedKept is how many distinct destinations (host and port) one sandbox's learn
// mode keeps: requests to others are only counted (NetLearning.Dropped).
const NetLearnedKept = 1000

// netLearnedPaths is how many distinct paths one destination keeps.
const netLearnedPaths = 8

// NetLearning is a sandbox's learn mode: from StartedAt until Until, the egress proxy's
// decisions for it are recorded.
type NetLearning struct {
	SandboxID string
	StartedAt time.Time
	Until     time.Time
	// Dropped counts requests to destinations past the NetLearnedKept recorded.
	Dropped int
}

// NetLearned is one destination a learning sandbox reached for.
type NetLearned struct {
	SandboxID string
	Host      string
	Port      int
	FirstSeen time.Time
	LastSeen  time.Time
	// Count is how many requests; Refused how many of them the proxy refused, Reason why
	// the last refused one was.
	Count   int
	Refused int
	Reason  string
	// Methods are the methods seen (CONNECT for tunnels); Paths the first distinct paths
	// of plain HTTP requests, without their queries.
	Methods []string
	Paths   []string
}

// StartNetLearning starts (or restarts, clearing what was learned) a sandbox's learn
// mode, to end at until.
func (s *Store) StartNetLearning(ctx context.Context, sandboxID string, start, until time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM net_learned WHERE sandbox_id = ?", sandboxID); err != nil {
		return fmt.Errorf("clear what was learned: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO net_learning (sandbox_id, started_at, until, dropped) VALUES (?,?,?,0)
		ON CONFLICT (sandbox_id) DO UPDATE SET started_at = excluded.started_at, until = excluded.until, dropped = 0`,
		sandboxID, start.UnixNano(), until.UnixNano()); err != nil {
		return fmt.Errorf("start learning: %w", err)
	}
	return tx.Commit()
}

// StopNetLearning ends a sandbox's learn mode at t, keeping what was learned; ErrNotFound
// when it never learned.
func (s *Store) StopNetLearning(ctx context.Context, sandboxID string, t time.Time) error {
	res, err := s.db.ExecContext(ctx, "UPDATE net_learning SET until = min(until, ?) WHERE sandbox_id = ?", t.UnixNano(), sandboxID)
	if err != nil {
		return fmt.Errorf("stop learning: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("learning of sandbox %s: %w", sandboxID, ErrNotFound)
	}
	return nil
}

// NetLearnings lists the learn modes of every sandbox, ended ones included.
func (s *Store) NetLearnings(ctx context.Context) ([]NetLearning, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT sandbox_id, started_at, until, dropped FROM net_learning")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NetLearning
	for rows.Next() {
		var l NetLearning
		var start, until int64
		if err := rows.Scan(&l.SandboxID, &start, &until, &l.Dropped); err != nil {
			return nil, err
		}
		l.StartedAt, l.Until = time.Unix(0, start), time.Unix(0, until)
		out = append(out, l)
	}
	return out, rows.Err()
}

// NetLearningOf returns a sandbox's learn mode; ErrNotFound when it never learned.
func (s *Store) NetLearningOf(ctx context.Context, sandboxID string) (NetLearning, error) {
	l := NetLearning{SandboxID: sandboxID}
	var start, until int64
	err := s.db.QueryRowContext(ctx, "SELECT started_at, until, dropped FROM net_learning WHERE sandbox_id = ?", sandboxID).
		Scan(&start, &until, &l.Dropped)
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("learning of sandbox %s: %w", sandboxID, ErrNotFound)
	} else if err != nil {
		return l, err
	}
	l.StartedAt, l.Until = time.Unix(0, start), time.Unix(0, until)
	return l, nil
}

// AddNetLearned merges a batch of learned destinations, in one transaction: each adds
// its counts, methods and paths to the sandbox's row of the same host and port. A new
// destination past NetLearnedKept for its sandbox is not kept: its requests count as
// dropped; one of a sandbox that never learned (removed meanwhile) is not kept either.
func (s *Store) AddNetLearned(ctx context.Context, batch []NetLearned) error {
	if len(batch) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, d := range batch {
		var methods, paths string
		var first int64
		var count, refused int
		reason := d.Reason
		err := tx.QueryRowContext(ctx, "SELECT first_seen, count, refused, reason, methods, paths FROM net_learned WHERE sandbox_id = ? AND host = ? AND port = ?",
			d.SandboxID, d.Host, d.Port).Scan(&first, &count, &refused, &reason, &methods, &paths)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			var learning int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM net_learning WHERE sandbox_id = ?", d.SandboxID).Scan(&learning); err != nil {
				return err
			}
			if learning == 0 {
				continue // the sandbox was removed meanwhile
			}
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM net_learned WHERE sandbox_id = ?", d.SandboxID).Scan(&n); err != nil {
				return err
			}
			if n >= NetLearnedKept {
				if _, err := tx.ExecContext(ctx, "UPDATE net_learning SET dropped = dropped + ? WHERE sandbox_id = ?", d.Count, d.SandboxID); err != nil {
					return err
				}
				continue
			}
			first, reason = d.FirstSeen.UnixNano(), d.Reason
		case err != nil:
			return fmt.Errorf("record a learned destination: %w", err)
		}
		if d.Reason != "" {
			reason = d.Reason
		}
		ms := mergeSet(splitNonEmpty(methods, ","), d.Methods, 16)
		ps := mergeSet(splitNonEmpty(paths, "\n"), d.Paths, netLearnedPaths)
		if _, err := tx.ExecContext(ctx, `INSERT INTO net_learned (sandbox_id, host, port, first_seen, last_seen, count, refused, reason, methods, paths)
			VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT (sandbox_id, host, port) DO UPDATE SET last_seen = excluded.last_seen,
			count = excluded.count, refused = excluded.refused, reason = excluded.reason, methods = excluded.methods, paths = excluded.paths`,
			d.SandboxID, d.Host, d.Port, first, d.LastSeen.UnixNano(), count+d.Count, refused+d.Refused, reason,
			strings.Join(ms, ","), strings.Join(ps, "\n")); err != nil {
			return fmt.Errorf("record a learned destination: %w", err)
		}
	}
	return tx.Commit()
}

// NetLearnedOf lists what a sandbox's learn mode recorded, by host and port.
func (s *Store) NetLearnedOf(ctx context.Context, sandboxID string) ([]NetLearned, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT host, port, first_seen, last_seen, count, refused, reason, methods, paths
		FROM net_learned WHERE sandbox_id = ? ORDER BY host, port`, sandboxID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NetLearned
	for rows.Next() {
		d := NetLearned{SandboxID: sandboxID}
		var first, last int64
		var methods, paths string
		if err := rows.Scan(&d.Host, &d.Port, &first, &last, &d.Count, &d.Refused, &d.Reason, &methods, &paths); err != nil {
			return nil, err
		}
		d.FirstSeen, d.LastSeen = time.Unix(0, first), time.Unix(0, last)
		d.Methods, d.Paths = splitNonEmpty(methods, ","), splitNonEmpty(paths, "\n")
		out = append(out, d)
	}
	return out, rows.Err()
}

// mergeSet appends to have the items of add it lacks, up to limit items in all.
func mergeSet(have, add []string, limit int) []string {
	for _, a := range add {
		if len(have) >= limit {
			break
		}
		found := false
		for _, h := range have {
			found = found || h == a
		}
		if !found {
			have = append(have, a)
		}
	}
	return have
}

// splitNonEmpty splits s at sep, dropping empty items.
func splitNonEmpty(s, sep string) []string {
	var out []string
	for _, f := range strings.Split(s, sep) {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}
