package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// GlobalScope is the scope of rules that apply to every sandbox.
const GlobalScope = "global"

// NetRule is a stored egress rule.
type NetRule struct {
	ID        int64
	Scope     string // GlobalScope or a sandbox ID
	Pattern   string
	Action    string // allow | deny
	CreatedAt time.Time
}

// SetNetRule adds a rule, or changes the action of the rule with the same scope and
// pattern: one pattern has one action per scope.
func (s *Store) SetNetRule(ctx context.Context, scope, pattern, action string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO net_rules (scope, pattern, action, created_at) VALUES (?,?,?,?)
		ON CONFLICT (scope, pattern) DO UPDATE SET action = excluded.action, created_at = excluded.created_at`,
		scope, pattern, action, now())
	if err != nil {
		return fmt.Errorf("save rule %s %s: %w", action, pattern, err)
	}
	return nil
}

// DeleteNetRule removes a rule; ErrNotFound when there is none.
func (s *Store) DeleteNetRule(ctx context.Context, scope, pattern string) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM net_rules WHERE scope = ? AND pattern = ?", scope, pattern)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("rule %s: %w", pattern, ErrNotFound)
	}
	return nil
}

// NetRules lists the rules of the given scopes, oldest first.
func (s *Store) NetRules(ctx context.Context, scopes ...string) ([]NetRule, error) {
	var out []NetRule
	for _, scope := range scopes {
		rows, err := s.db.QueryContext(ctx, "SELECT id, scope, pattern, action, created_at FROM net_rules WHERE scope = ? ORDER BY id", scope)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var r NetRule
			var t int64
			if err := rows.Scan(&r.ID, &r.Scope, &r.Pattern, &r.Action, &t); err != nil {
				rows.Close()
				return nil, err
			}
			r.CreatedAt = time.Unix(0, t)
			out = append(out, r)
		}
		rows.Close()
	}
	return out, nil
}

// NetDenial is a refused egress request, or several identical ones (same sandbox, host
// and port) refused in a short while.
type NetDenial struct {
	ID int64
	// Time is when the first was refused, LastSeen when the last was.
	Time      time.Time
	LastSeen  time.Time
	SandboxID string
	Host      string
	Port      int
	Reason    string
	// Count is how many requests this denial stands for.
	Count int
}

// NetDenialsKept is how many denials each sandbox keeps: recording one more removes the
// oldest, so a sandbox that asks for endless distinct hosts cannot fill the disk.
const NetDenialsKept = 1000

const denialCols = "id, time, last_seen, sandbox_id, host, port, reason, count"

// AddNetDenial records d.Count refused requests (at least one) as a denial of its own,
// then removes the sandbox's oldest denials beyond NetDenialsKept.
func (s *Store) AddNetDenial(ctx context.Context, d NetDenial) error {
	d.Count = max(d.Count, 1)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO net_denials (time, last_seen, sandbox_id, host, port, reason, count) VALUES (?,?,?,?,?,?,?)",
		d.Time.UnixNano(), d.Time.UnixNano(), d.SandboxID, d.Host, d.Port, d.Reason, d.Count); err != nil {
		return fmt.Errorf("record a denial: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM net_denials WHERE sandbox_id = ? AND id <=
		(SELECT id FROM net_denials WHERE sandbox_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`, d.SandboxID, d.SandboxID, NetDenialsKept); err != nil {
		return fmt.Errorf("remove old denials: %w", err)
	}
	return tx.Commit()
}

// RepeatNetDenial counts d.Count more requests (at least one), the last refused at
// d.Time, against the newest denial of the same sandbox, host and port. When there is
// none (it was removed meanwhile), d is recorded as a denial of its own.
func (s *Store) RepeatNetDenial(ctx context.Context, d NetDenial) error {
	d.Count = max(d.Count, 1)
	res, err := s.db.ExecContext(ctx, `UPDATE net_denials SET count = count + ?, last_seen = ? WHERE id =
		(SELECT id FROM net_denials WHERE sandbox_id = ? AND host = ? AND port = ? ORDER BY id DESC LIMIT 1)`,
		d.Count, d.Time.UnixNano(), d.SandboxID, d.Host, d.Port)
	if err != nil {
		return fmt.Errorf("count a denial: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return s.AddNetDenial(ctx, d)
	}
	return nil
}

func scanDenial(row interface{ Scan(...any) error }) (NetDenial, error) {
	var d NetDenial
	var t, last int64
	if err := row.Scan(&d.ID, &t, &last, &d.SandboxID, &d.Host, &d.Port, &d.Reason, &d.Count); err != nil {
		return d, err
	}
	d.Time, d.LastSeen = time.Unix(0, t), time.Unix(0, last)
	return d, nil
}

// NetDenials lists denials, newest last; sandboxID "" lists every sandbox's. At most
// limit rows (the newest), all when limit is 0.
func (s *Store) NetDenials(ctx context.Context, sandboxID string, limit int) ([]NetDenial, error) {
	q := "SELECT " + denialCols + " FROM net_denials"
	var args []any
	if sandboxID != "" {
		q += " WHERE sandbox_id = ?"
		args = append(args, sandboxID)
	}
	q += " ORDER BY id DESC"
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NetDenial
	for rows.Next() {
		d, err := scanDenial(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	slices.Reverse(out)
	return out, rows.Err()
}

// NetDenial returns one denial by ID.
func (s *Store) NetDenial(ctx context.Context, id int64) (NetDenial, error) {
	d, err := scanDenial(s.db.QueryRowContext(ctx, "SELECT "+denialCols+" FROM net_denials WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("denial %d: %w", id, ErrNotFound)
	}
	return d, err
}
