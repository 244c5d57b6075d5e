package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// ErrNoTask is returned for a task name the store does not hold.
var ErrNoTask = errors.New("no such task")

// ErrNoQueueEntry is returned for a merge queue entry the store does not hold.
var ErrNoQueueEntry = errors.New("no such merge queue entry")

// PutTask writes a task whole, adding it or replacing the one of its name.
func (s *Store) PutTask(ctx context.Context, t wire.Task) error {
	doc, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO tasks (name, doc, created, updated) VALUES (?,?,?,?)
		ON CONFLICT (name) DO UPDATE SET doc = excluded.doc, updated = excluded.updated`,
		t.Name, string(doc), t.Created.UnixNano(), now())
	return err
}

// AddTask writes a new task; it fails if one of its name exists.
func (s *Store) AddTask(ctx context.Context, t wire.Task) error {
	doc, err := json.Marshal(t)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, "INSERT INTO tasks (name, doc, created, updated) VALUES (?,?,?,?)",
		t.Name, string(doc), t.Created.UnixNano(), now())
	if err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed") {
		return fmt.Errorf("a task named %s exists already", t.Name)
	}
	return err
}

// GetTask returns the task of this name.
func (s *Store) GetTask(ctx context.Context, name string) (wire.Task, error) {
	return getDoc[wire.Task](ctx, s.db, "task", ErrNoTask, "SELECT name, doc FROM tasks WHERE name = ?", name)
}

// ListTasks returns every task, the oldest first.
func (s *Store) ListTasks(ctx context.Context) ([]wire.Task, error) {
	return listDocs[wire.Task](ctx, s.db, "task", "SELECT name, doc FROM tasks ORDER BY created, name")
}

// getDoc reads the JSON document of the one row query finds (its columns: a key naming
// it and the document); no row is errNone.
func getDoc[T any](ctx context.Context, db *sql.DB, what string, errNone error, query string, args ...any) (T, error) {
	var v T
	var key, doc string
	err := db.QueryRowContext(ctx, query, args...).Scan(&key, &doc)
	if errors.Is(err, sql.ErrNoRows) {
		return v, errNone
	}
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return v, fmt.Errorf("%s %s: %w", what, key, err)
	}
	return v, nil
}

// listDocs reads the JSON documents of the rows query finds, in its order (its columns:
// a key naming each and the document).
func listDocs[T any](ctx context.Context, db *sql.DB, what, query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var key, doc string
		if err := rows.Scan(&key, &doc); err != nil {
			return nil, err
		}
		var v T
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, key, err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// DeleteTask forgets a task and its merge queue entries.
func (s *Store) DeleteTask(ctx context.Context, name string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM land_queue WHERE task = ?", name); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM tasks WHERE name = ?", name); err != nil {
		return err
	}
	return tx.Commit()
}

// AddQueueEntry appends an entry to the merge queue and returns it with its id.
func (s *Store) AddQueueEntry(ctx context.Context, e wire.QueueEntry) (wire.QueueEntry, error) {
	t := time.Now()
	e.Created, e.Updated = t, t
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return e, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, "INSERT INTO land_queue (task, repo, into_branch, state, doc) VALUES (?,?,?,?,'{}')",
		e.Task, e.Repo, e.Into, e.State)
	if err != nil {
		return e, err
	}
	if e.ID, err = res.LastInsertId(); err != nil {
		return e, err
	}
	doc, err := json.Marshal(e)
	if err != nil {
		return e, err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE land_queue SET doc = ? WHERE id = ?", string(doc), e.ID); err != nil {
		return e, err
	}
	return e, tx.Commit()
}

// UpdateQueueEntry writes an entry whole (its state, detail, commits, pull request).
func (s *Store) UpdateQueueEntry(ctx context.Context, e wire.QueueEntry) error {
	e.Updated = time.Now()
	doc, err := json.Marshal(e)
	if err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, "UPDATE land_queue SET state = ?, doc = ? WHERE id = ?", e.State, string(doc), e.ID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNoQueueEntry
	}
	return nil
}

// GetQueueEntry returns the entry with this id.
func (s *Store) GetQueueEntry(ctx context.Context, id int64) (wire.QueueEntry, error) {
	return getDoc[wire.QueueEntry](ctx, s.db, "merge queue entry", ErrNoQueueEntry, "SELECT id, doc FROM land_queue WHERE id = ?", id)
}

// QueueEntries returns the merge queue's entries in order (oldest first); with task
// set, only that task's.
func (s *Store) QueueEntries(ctx context.Context, task string) ([]wire.QueueEntry, error) {
	return listDocs[wire.QueueEntry](ctx, s.db, "merge queue entry", "SELECT id, doc FROM land_queue WHERE ? = '' OR task = ? ORDER BY id", task, task)
}
