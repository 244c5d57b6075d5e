package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Token is an API token for the TCP listener. Only the SHA-256 of its secret is kept.
type Token struct {
	Name     string
	Hash     []byte
	ReadOnly bool
	Created  time.Time
	// LastUsed is zero until the token authenticates a request.
	LastUsed time.Time
	// UserID is the user the token stands for (users.id); 0 is the daemon's host, for a
	// token `paddock token create` made.
	UserID int64
}

// CreateToken stores a new token; ErrNameTaken when one has that name.
func (s *Store) CreateToken(ctx context.Context, t Token) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO api_tokens (name, hash, read_only, created_at, user_id) VALUES (?,?,?,?,?)",
		t.Name, t.Hash, t.ReadOnly, t.Created.UnixNano(), t.UserID)
	if err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed: api_tokens.name") {
		return fmt.Errorf("token %q: %w", t.Name, ErrNameTaken)
	}
	if err != nil {
		return fmt.Errorf("save token %q: %w", t.Name, err)
	}
	return nil
}

// Tokens lists the tokens, oldest first.
func (s *Store) Tokens(ctx context.Context) ([]Token, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name, hash, read_only, created_at, last_used, user_id FROM api_tokens ORDER BY created_at, name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		var t Token
		var created, used int64
		if err := rows.Scan(&t.Name, &t.Hash, &t.ReadOnly, &created, &used, &t.UserID); err != nil {
			return nil, err
		}
		t.Created = time.Unix(0, created)
		if used != 0 {
			t.LastUsed = time.Unix(0, used)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// DeleteToken revokes a token; ErrNotFound when there is none by that name.
func (s *Store) DeleteToken(ctx context.Context, name string) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM api_tokens WHERE name = ?", name)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("token %q: %w", name, ErrNotFound)
	}
	return nil
}

// TouchToken records that a token was used at t.
func (s *Store) TouchToken(ctx context.Context, name string, t time.Time) error {
	_, err := s.db.ExecContext(ctx, "UPDATE api_tokens SET last_used = ? WHERE name = ?", t.UnixNano(), name)
	return err
}

// AddWebSession stores a browser session (the SHA-256 of its cookie) of a user (0: the
// daemon's host) until expires. Expired sessions are dropped on the way.
func (s *Store) AddWebSession(ctx context.Context, hash []byte, userID int64, created, expires time.Time) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM web_sessions WHERE expires_at <= ?", created.UnixNano()); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, "INSERT INTO web_sessions (hash, created_at, expires_at, user_id) VALUES (?,?,?,?)",
		hash, created.UnixNano(), expires.UnixNano(), userID)
	return err
}

// WebSession returns when the session with this hash expires and whose it is (0: the
// daemon's host); ErrNotFound when there is none.
func (s *Store) WebSession(ctx context.Context, hash []byte) (expires time.Time, userID int64, err error) {
	var t int64
	err = s.db.QueryRowContext(ctx, "SELECT expires_at, user_id FROM web_sessions WHERE hash = ?", hash).Scan(&t, &userID)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, 0, ErrNotFound
	}
	return time.Unix(0, t), userID, err
}

// DeleteWebSession ends one browser session.
func (s *Store) DeleteWebSession(ctx context.Context, hash []byte) error {
	_, err := s.db.ExecContext(ctx, "DELETE FROM web_sessions WHERE hash = ?", hash)
	return err
}

// DeleteWebSessions ends every browser session.
func (s *Store) DeleteWebSessions(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "DELETE FROM web_sessions")
	return err
}

// WebListener is where the daemon serves the API over TCP.
type WebListener struct {
	Listen  string
	TLSCert string
	TLSKey  string
}

// GetWebListener returns the remembered TCP listener; ErrNotFound when there is none.
func (s *Store) GetWebListener(ctx context.Context) (WebListener, error) {
	var l WebListener
	err := s.db.QueryRowContext(ctx, "SELECT listen, tls_cert, tls_key FROM web_listener WHERE id = 1").Scan(&l.Listen, &l.TLSCert, &l.TLSKey)
	if errors.Is(err, sql.ErrNoRows) {
		return l, ErrNotFound
	}
	return l, err
}

// SetWebListener remembers the TCP listener.
func (s *Store) SetWebListener(ctx context.Context, l WebListener) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO web_listener (id, listen, tls_cert, tls_key) VALUES (1,?,?,?)
		ON CONFLICT (id) DO UPDATE SET listen = excluded.listen, tls_cert = excluded.tls_cert, tls_key = excluded.tls_key`,
		l.Listen, l.TLSCert, l.TLSKey)
	return err
}

// DeleteWebListener forgets the TCP listener.
func (s *Store) DeleteWebListener(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "DELETE FROM web_listener")
	return err
}
