package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// Run is wire.Run (the API's wire type).
type Run = wire.Run

// Usage is wire.Usage (the API's wire type).
type Usage = wire.Usage

// RunStep is wire.RunStep (the API's wire type).
type RunStep = wire.RunStep

// ErrNoRun is returned for a run id the store does not hold.
var ErrNoRun = errors.New("no such run")

const runColumns = `id, sandbox_id, sandbox, provider, model, title, status, error, created, updated, turns,
	tool_calls, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens`

// AddRun records a new run.
func (s *Store) AddRun(ctx context.Context, r Run) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO runs ("+runColumns+", conversation) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
		r.ID, r.SandboxID, r.Sandbox, r.Provider, r.Model, r.Title, r.Status, r.Error, r.Created.UnixNano(), r.Updated.UnixNano(),
		r.Turns, r.ToolCalls, r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, r.Conversation)
	return err
}

// UpdateRun writes a run's status, error, totals and conversation.
func (s *Store) UpdateRun(ctx context.Context, r Run) error {
	_, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, error = ?, updated = ?, turns = ?, tool_calls = ?, input_tokens = ?,
		output_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?, conversation = ? WHERE id = ?`,
		r.Status, r.Error, now(), r.Turns, r.ToolCalls, r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens,
		r.Conversation, r.ID)
	return err
}

// GetRun returns the run with this id, or with this unique id prefix; its conversation included.
func (s *Store) GetRun(ctx context.Context, id string) (Run, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+runColumns+", conversation FROM runs WHERE id = ? OR id LIKE ? ESCAPE '\\' ORDER BY id = ? DESC LIMIT 2",
		id, escapeLike(id)+"%", id)
	if err != nil {
		return Run{}, err
	}
	defer rows.Close()
	var found []Run
	for rows.Next() {
		r, err := scanRun(rows, true)
		if err != nil {
			return Run{}, err
		}
		if r.ID == id {
			return r, nil
		}
		found = append(found, r)
	}
	if err := rows.Err(); err != nil {
		return Run{}, err
	}
	switch len(found) {
	case 0:
		return Run{}, fmt.Errorf("%w %q", ErrNoRun, id)
	case 1:
		return found[0], nil
	}
	return Run{}, fmt.Errorf("%w %q: the prefix names more than one run", ErrNoRun, id)
}

// Runs lists runs, newest first; of one sandbox when sandbox is not empty.
func (s *Store) Runs(ctx context.Context, sandbox string) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+runColumns+" FROM runs WHERE ? = '' OR sandbox = ? ORDER BY created DESC", sandbox, sandbox)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows, false)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// InterruptRuns marks every run still recorded as running as interrupted: the daemon
// that ran it is gone. It returns how many it marked.
func (s *Store) InterruptRuns(ctx context.Context, why string) (int64, error) {
	res, err := s.db.ExecContext(ctx, "UPDATE runs SET status = 'interrupted', error = ?, updated = ? WHERE status = 'running'", why, now())
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func scanRun(rows *sql.Rows, conversation bool) (Run, error) {
	var r Run
	var created, updated int64
	dest := []any{&r.ID, &r.SandboxID, &r.Sandbox, &r.Provider, &r.Model, &r.Title, &r.Status, &r.Error, &created, &updated,
		&r.Turns, &r.ToolCalls, &r.InputTokens, &r.OutputTokens, &r.CacheReadTokens, &r.CacheWriteTokens}
	if conversation {
		dest = append(dest, &r.Conversation)
	}
	if err := rows.Scan(dest...); err != nil {
		return Run{}, err
	}
	r.Created, r.Updated = time.Unix(0, created), time.Unix(0, updated)
	return r, nil
}

// AddRunStep records a step of a run; its seq is the next of the run.
func (s *Store) AddRunStep(ctx context.Context, runID string, st RunStep) (int, error) {
	var seq int
	err := s.db.QueryRowContext(ctx, `INSERT INTO run_steps (run_id, seq, kind, name, input, output, is_error, started, duration,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
		VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_steps WHERE run_id = ?), ?,?,?,?,?,?,?,?,?,?,?) RETURNING seq`,
		runID, runID, st.Kind, st.Name, st.Input, st.Output, st.IsError, st.Started.UnixNano(), int64(st.Duration),
		st.InputTokens, st.OutputTokens, st.CacheReadTokens, st.CacheWriteTokens).Scan(&seq)
	return seq, err
}

// RunSteps lists a run's steps in order.
func (s *Store) RunSteps(ctx context.Context, runID string) ([]RunStep, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, kind, name, input, output, is_error, started, duration, input_tokens,
		output_tokens, cache_read_tokens, cache_write_tokens FROM run_steps WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RunStep
	for rows.Next() {
		var st RunStep
		var started, duration int64
		if err := rows.Scan(&st.Seq, &st.Kind, &st.Name, &st.Input, &st.Output, &st.IsError, &started, &duration,
			&st.InputTokens, &st.OutputTokens, &st.CacheReadTokens, &st.CacheWriteTokens); err != nil {
			return nil, err
		}
		st.Started, st.Duration = time.Unix(0, started), time.Duration(duration)
		out = append(out, st)
	}
	return out, rows.Err()
}

// escapeLike escapes the wildcards of a LIKE pattern (with ESCAPE '\\').
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s)
}
