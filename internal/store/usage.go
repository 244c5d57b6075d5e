package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/transcript"
)

// MeteredCall is one model request a sandbox made through the credential proxy, with
// the usage its answer reported.
type MeteredCall struct {
	Time      time.Time
	SandboxID string
	// Sandbox is the sandbox's name when the request was made.
	Sandbox string
	// Session is paddock's session the request came from, "" when unknown.
	Session string
	// AgentSession is the agent's own conversation id, when the request carried one.
	AgentSession string
	Provider     string
	Model        string
	// Status is the answer's HTTP status.
	Status int
	transcript.Usage
	// CostUSD is the estimated cost; Priced is false when no price was known for the
	// model (CostUSD is then 0).
	CostUSD  float64
	Priced   bool
	Duration time.Duration
}

// UsageSum is wire.UsageSum (the API's wire type).
type UsageSum = wire.UsageSum

// AddMeteredCalls records model requests, in one transaction.
func (s *Store) AddMeteredCalls(ctx context.Context, calls []MeteredCall) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO usage (time, sandbox_id, sandbox, session, agent_session, provider, model, status,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, priced, duration) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, u := range calls {
		priced := 0
		if u.Priced {
			priced = 1
		}
		if _, err := stmt.ExecContext(ctx, u.Time.UnixNano(), u.SandboxID, u.Sandbox, u.Session, u.AgentSession, u.Provider, u.Model, u.Status,
			u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CostUSD, priced, int64(u.Duration)); err != nil {
			return fmt.Errorf("record usage of %q: %w", u.Sandbox, err)
		}
	}
	return tx.Commit()
}

// sessionExpr is a usage row's session: the one recorded, else the session whose
// resume id the request carried (an agent whose id paddock learns after it starts).
const sessionExpr = `CASE WHEN u.session != '' THEN u.session ELSE COALESCE((SELECT s.name FROM sessions s
	WHERE s.sandbox_id = u.sandbox_id AND s.resume_id = u.agent_session AND u.agent_session != ''), '') END`

const sumCols = `COUNT(*), COALESCE(SUM(u.input_tokens), 0), COALESCE(SUM(u.output_tokens), 0), COALESCE(SUM(u.cache_read_tokens), 0),
	COALESCE(SUM(u.cache_write_tokens), 0), COALESCE(SUM(u.cost_usd), 0), COALESCE(SUM(1 - u.priced), 0)`

func scanSum(row interface{ Scan(...any) error }, extra ...any) (UsageSum, error) {
	var s UsageSum
	err := row.Scan(append(extra, &s.Requests, &s.InputTokens, &s.OutputTokens, &s.CacheReadTokens, &s.CacheWriteTokens, &s.CostUSD, &s.Unpriced)...)
	return s, err
}

// SumUsage is what sandbox sandboxID spent, all of it (session "") or one session's.
func (s *Store) SumUsage(ctx context.Context, sandboxID, session string) (UsageSum, error) {
	q := "SELECT " + sumCols + " FROM usage u WHERE u.sandbox_id = ?"
	args := []any{sandboxID}
	if session != "" {
		q += " AND (" + sessionExpr + ") = ?"
		args = append(args, session)
	}
	return scanSum(s.db.QueryRowContext(ctx, q, args...))
}

// UsageBySandbox is what each sandbox spent, by sandbox id.
func (s *Store) UsageBySandbox(ctx context.Context) (map[string]UsageSum, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT u.sandbox_id, "+sumCols+" FROM usage u GROUP BY u.sandbox_id")
	if err != nil {
		return nil, fmt.Errorf("read usage: %w", err)
	}
	defer rows.Close()
	out := map[string]UsageSum{}
	for rows.Next() {
		var id string
		sum, err := scanSum(rows, &id)
		if err != nil {
			return nil, err
		}
		out[id] = sum
	}
	return out, rows.Err()
}

// UsageQuery selects recorded usage. Zero fields select everything.
type UsageQuery struct {
	// Sandbox is a sandbox's name (every sandbox that had it); SandboxID one sandbox;
	// Session one of its sessions.
	Sandbox, SandboxID, Session string
	// Since bounds the requests' time.
	Since time.Time
}

// UsageGroup is wire.UsageGroup.
type UsageGroup = wire.UsageGroup

// UsageGroups sums the selected usage by sandbox, session, provider and model.
func (s *Store) UsageGroups(ctx context.Context, q UsageQuery) ([]UsageGroup, error) {
	var where []string
	var args []any
	if q.Sandbox != "" {
		where, args = append(where, "u.sandbox = ?"), append(args, q.Sandbox)
	}
	if q.SandboxID != "" {
		where, args = append(where, "u.sandbox_id = ?"), append(args, q.SandboxID)
	}
	if !q.Since.IsZero() {
		where, args = append(where, "u.time >= ?"), append(args, q.Since.UnixNano())
	}
	inner := "SELECT u.*, " + sessionExpr + " AS sess FROM usage u"
	if len(where) > 0 {
		inner += " WHERE " + strings.Join(where, " AND ")
	}
	query := "SELECT u.sandbox, u.sess, u.provider, u.model, " + sumCols + " FROM (" + inner + ") u"
	if q.Session != "" {
		query += " WHERE u.sess = ?"
		args = append(args, q.Session)
	}
	query += " GROUP BY u.sandbox, u.sess, u.provider, u.model ORDER BY MIN(u.time), u.sandbox, u.sess, u.model"
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read usage: %w", err)
	}
	defer rows.Close()
	var out []UsageGroup
	for rows.Next() {
		var g UsageGroup
		if g.UsageSum, err = scanSum(rows, &g.Sandbox, &g.Session, &g.Provider, &g.Model); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// Budget bounds what a sandbox (Session "") or one of its sessions may spend; a zero
// field is no bound of its kind.
type Budget struct {
	SandboxID string `json:"-"`
	Session   string `json:"session,omitempty"`
	// USD is in estimated US dollars.
	USD float64 `json:"usd,omitempty"`
	// Tokens counts every kind of token together.
	Tokens    int64     `json:"tokens,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SetBudget sets a budget; one with no bound removes it.
func (s *Store) SetBudget(ctx context.Context, b Budget) error {
	var err error
	if b.USD <= 0 && b.Tokens <= 0 {
		_, err = s.db.ExecContext(ctx, "DELETE FROM budgets WHERE sandbox_id = ? AND session = ?", b.SandboxID, b.Session)
	} else {
		_, err = s.db.ExecContext(ctx, `INSERT INTO budgets (sandbox_id, session, usd, tokens, updated_at) VALUES (?,?,?,?,?)
			ON CONFLICT (sandbox_id, session) DO UPDATE SET usd = excluded.usd, tokens = excluded.tokens, updated_at = excluded.updated_at`,
			b.SandboxID, b.Session, max(b.USD, 0), max(b.Tokens, 0), now())
	}
	if err != nil {
		return fmt.Errorf("set budget: %w", err)
	}
	return nil
}

// Budgets lists every budget.
func (s *Store) Budgets(ctx context.Context) ([]Budget, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT sandbox_id, session, usd, tokens, updated_at FROM budgets ORDER BY sandbox_id, session")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Budget
	for rows.Next() {
		var b Budget
		var t int64
		if err := rows.Scan(&b.SandboxID, &b.Session, &b.USD, &b.Tokens, &t); err != nil {
			return nil, err
		}
		b.UpdatedAt = time.Unix(0, t)
		out = append(out, b)
	}
	return out, rows.Err()
}
