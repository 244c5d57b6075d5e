package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// NetDenial is a refused egress request.
type NetDenial struct {
	ID        int64
	Time      time.Time
	SandboxID string
	Host      string
	Port      int
	Reason    string
}

// AddNetDenial records a refused request.
func (s *Store) AddNetDenial(ctx context.Context, d NetDenial) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO net_denials (time, sandbox_id, host, port, reason) VALUES (?,?,?,?,?)",
		d.Time.UnixNano(), d.SandboxID, d.Host, d.Port, d.Reason)
	return err
}

// NetDenials lists denials, newest last; sandboxID "" lists every sandbox's. At most
// limit rows (the newest), all when limit is 0.
func (s *Store) NetDenials(ctx context.Context, sandboxID string, limit int) ([]NetDenial, error) {
	q := "SELECT id, time, sandbox_id, host, port, reason FROM net_denials"
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
		var d NetDenial
		var t int64
		if err := rows.Scan(&d.ID, &t, &d.SandboxID, &d.Host, &d.Port, &d.Reason); err != nil {
			return nil, err
		}
		d.Time = time.Unix(0, t)
		out = append([]NetDenial{d}, out...)
	}
	return out, rows.Err()
}

// NetDenial returns one denial by ID.
func (s *Store) NetDenial(ctx context.Context, id int64) (NetDenial, error) {
	var d NetDenial
	var t int64
	err := s.db.QueryRowContext(ctx, "SELECT id, time, sandbox_id, host, port, reason FROM net_denials WHERE id = ?", id).
		Scan(&d.ID, &t, &d.SandboxID, &d.Host, &d.Port, &d.Reason)
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("denial %d: %w", id, ErrNotFound)
	}
	d.Time = time.Unix(0, t)
	return d, err
}
