package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Session is a session's row. Its live status is not stored: it comes from the sandbox
// (the tmux pane and the agent's hooks) when asked.
type Session struct {
	SandboxID string
	Name      string
	Agent     string
	// ResumeID is the agent's own id for the conversation, used to resume it.
	ResumeID string
	// Command is the command line of a shell session.
	Command string
	// Dir is the working directory when not /workspace (a worktree).
	Dir string
	// Ended says its process ended while its sandbox ran (its agent quit): starting the
	// sandbox again leaves it, where it resumes every other session.
	Ended     bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

const sessionCols = "sandbox_id, name, agent, resume_id, command, dir, ended, created_at, updated_at"

func scanSession(row interface{ Scan(...any) error }) (Session, error) {
	var s Session
	var c, u int64
	err := row.Scan(&s.SandboxID, &s.Name, &s.Agent, &s.ResumeID, &s.Command, &s.Dir, &s.Ended, &c, &u)
	s.CreatedAt, s.UpdatedAt = time.Unix(0, c), time.Unix(0, u)
	return s, err
}

// CreateSession inserts a session; ErrNameTaken if the sandbox has one by that name.
func (s *Store) CreateSession(ctx context.Context, se Session) error {
	t := now()
	_, err := s.db.ExecContext(ctx, "INSERT INTO sessions ("+sessionCols+") VALUES (?,?,?,?,?,?,?,?,?)",
		se.SandboxID, se.Name, se.Agent, se.ResumeID, se.Command, se.Dir, se.Ended, t, t)
	if err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed") {
		return fmt.Errorf("session %q: %w", se.Name, ErrNameTaken)
	}
	return err
}

// GetSession finds a session of a sandbox.
func (s *Store) GetSession(ctx context.Context, sandboxID, name string) (Session, error) {
	se, err := scanSession(s.db.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE sandbox_id = ? AND name = ?", sandboxID, name))
	if errors.Is(err, sql.ErrNoRows) {
		return se, fmt.Errorf("session %q: %w", name, ErrNotFound)
	}
	return se, err
}

// ListSessions lists a sandbox's sessions, oldest first.
func (s *Store) ListSessions(ctx context.Context, sandboxID string) ([]Session, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE sandbox_id = ? ORDER BY created_at, name", sandboxID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		se, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, se)
	}
	return out, rows.Err()
}

// SetResumeID records the agent's conversation id.
func (s *Store) SetResumeID(ctx context.Context, sandboxID, name, resumeID string) error {
	_, err := s.db.ExecContext(ctx, "UPDATE sessions SET resume_id = ?, updated_at = ? WHERE sandbox_id = ? AND name = ?",
		resumeID, now(), sandboxID, name)
	return err
}

// SetSessionEnded records whether a session's process ended while its sandbox ran.
func (s *Store) SetSessionEnded(ctx context.Context, sandboxID, name string, ended bool) error {
	_, err := s.db.ExecContext(ctx, "UPDATE sessions SET ended = ?, updated_at = ? WHERE sandbox_id = ? AND name = ?",
		ended, now(), sandboxID, name)
	return err
}

// RenameSession renames a session; ErrNameTaken if the new name is in use.
func (s *Store) RenameSession(ctx context.Context, sandboxID, from, to string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, "UPDATE sessions SET name = ?, updated_at = ? WHERE sandbox_id = ? AND name = ?",
		to, now(), sandboxID, from)
	if err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed") {
		return fmt.Errorf("session %q: %w", to, ErrNameTaken)
	}
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("session %q: %w", from, ErrNotFound)
	}
	// Its checkpoints go with it, in the same write: their turns go on being numbered,
	// listed and rewound under the new name.
	if _, err := tx.ExecContext(ctx, "UPDATE checkpoints SET session = ?, doc = json_set(doc, '$.session', ?) WHERE sandbox_id = ? AND session = ?",
		to, to, sandboxID, from); err != nil {
		return err
	}
	return tx.Commit()
}

// DeleteSession removes a session.
func (s *Store) DeleteSession(ctx context.Context, sandboxID, name string) error {
	_, err := s.db.ExecContext(ctx, "DELETE FROM sessions WHERE sandbox_id = ? AND name = ?", sandboxID, name)
	return err
}

// SessionByResumeID finds the session of a sandbox whose agent's conversation id is
// resumeID.
func (s *Store) SessionByResumeID(ctx context.Context, sandboxID, resumeID string) (Session, error) {
	se, err := scanSession(s.db.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM sessions WHERE sandbox_id = ? AND resume_id = ? AND resume_id != ''",
		sandboxID, resumeID))
	if errors.Is(err, sql.ErrNoRows) {
		return se, fmt.Errorf("session with conversation %q: %w", resumeID, ErrNotFound)
	}
	return se, err
}

// SandboxesWithSessions returns the ids of the sandboxes that have at least one session.
func (s *Store) SandboxesWithSessions(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT DISTINCT sandbox_id FROM sessions")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}
