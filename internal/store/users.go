package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// User is a person signed in with GitHub. Their GitHub account's id, not its login
// (which can change), says who they are.
type User struct {
	ID       int64
	GitHubID int64
	Login    string
	Name     string
	Admin    bool
	// GitHubToken is the user's GitHub OAuth token, kept to check their membership of
	// the organization again; empty once it was revoked.
	GitHubToken string
	Created     time.Time
	LastSeen    time.Time
	// Checked is when GitHub last said the user is a member; Revoked, when it said they
	// no longer are (zero while they are).
	Checked time.Time
	Revoked time.Time
}

const userCols = "id, github_id, login, name, admin, github_token, created_at, last_seen, checked_at, revoked_at"

func scanUser(row interface{ Scan(...any) error }) (User, error) {
	var u User
	var created, seen, checked, revoked int64
	err := row.Scan(&u.ID, &u.GitHubID, &u.Login, &u.Name, &u.Admin, &u.GitHubToken, &created, &seen, &checked, &revoked)
	u.Created = unixOrZero(created)
	u.LastSeen = unixOrZero(seen)
	u.Checked = unixOrZero(checked)
	u.Revoked = unixOrZero(revoked)
	return u, err
}

func unixOrZero(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// SignIn records a sign-in GitHub vouched for at t: it makes the user, or updates their
// login, name, admin flag and GitHub token and clears a revocation; it returns the row.
func (s *Store) SignIn(ctx context.Context, u User, t time.Time) (User, error) {
	_, err := s.db.ExecContext(ctx, `INSERT INTO users (github_id, login, name, admin, github_token, created_at, last_seen, checked_at)
		VALUES (?,?,?,?,?,?,?,?)
		ON CONFLICT (github_id) DO UPDATE SET login = excluded.login, name = excluded.name, admin = excluded.admin,
			github_token = excluded.github_token, last_seen = excluded.last_seen, checked_at = excluded.checked_at, revoked_at = 0`,
		u.GitHubID, u.Login, u.Name, u.Admin, u.GitHubToken, t.UnixNano(), t.UnixNano(), t.UnixNano())
	if err != nil {
		return User{}, fmt.Errorf("save user %s: %w", u.Login, err)
	}
	return scanUser(s.db.QueryRowContext(ctx, "SELECT "+userCols+" FROM users WHERE github_id = ?", u.GitHubID))
}

// GetUser returns a user by id; ErrNotFound when there is none.
func (s *Store) GetUser(ctx context.Context, id int64) (User, error) {
	u, err := scanUser(s.db.QueryRowContext(ctx, "SELECT "+userCols+" FROM users WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("user %d: %w", id, ErrNotFound)
	}
	return u, err
}

// Users lists the users, oldest first.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+userCols+" FROM users ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// UserChecked records that GitHub said at t that the user is still a member, with
// whether they are an admin.
func (s *Store) UserChecked(ctx context.Context, id int64, admin bool, t time.Time) error {
	_, err := s.db.ExecContext(ctx, "UPDATE users SET checked_at = ?, admin = ? WHERE id = ?", t.UnixNano(), admin, id)
	return err
}

// UserSeen records that the user made a request at t.
func (s *Store) UserSeen(ctx context.Context, id int64, t time.Time) error {
	_, err := s.db.ExecContext(ctx, "UPDATE users SET last_seen = ? WHERE id = ?", t.UnixNano(), id)
	return err
}

// RevokeUser ends a user's access at t: their tokens and browser sessions are deleted
// and their GitHub token forgotten. Their sandboxes stay, theirs, for an admin to see.
func (s *Store) RevokeUser(ctx context.Context, id int64, t time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM api_tokens WHERE user_id = ?", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM web_sessions WHERE user_id = ?", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE users SET revoked_at = ?, github_token = '' WHERE id = ?", t.UnixNano(), id); err != nil {
		return err
	}
	return tx.Commit()
}
