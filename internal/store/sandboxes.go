package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sandbox is a sandbox's row.
type Sandbox struct {
	ID         string
	Name       string
	Backend    string
	State      string
	SourcePath string
	SourceURL  string
	BaseCommit string
	Rootfs     string
	Detail     string
	// Network is "closed" (loopback only, egress through the proxy) or "open".
	Network    string
	CredsPort  int
	EgressPort int
	// CredsToken is the placeholder API key the sandbox holds; the credential proxy
	// accepts requests only with it.
	CredsToken string
	// Agents lists the agent kinds the sandbox was made for, comma-separated.
	Agents string
	// SyncMode is manual, on-commit or on-idle.
	SyncMode string
	// Runtime is the OCI runtime the sandbox runs under (runsc for gVisor); empty is the
	// backend's default.
	Runtime string
	// IdleStop stops the sandbox after this long unused, instead of the config's
	// idle_stop; zero means the config's.
	IdleStop time.Duration
	// Image is the image the sandbox runs (docker); empty is the backend's default.
	Image string
	// OwnerID is the user who made the sandbox (users.id); 0 is the daemon's host, whose
	// sandboxes are the admins'.
	OwnerID   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

const sandboxCols = "id, name, backend, state, source_path, source_url, base_commit, rootfs, detail, network, creds_port, egress_port, creds_token, agents, sync_mode, runtime, idle_stop_seconds, image, owner_id, created_at, updated_at"

func scanSandbox(row interface{ Scan(...any) error }) (Sandbox, error) {
	var sb Sandbox
	var created, updated, idle int64
	err := row.Scan(&sb.ID, &sb.Name, &sb.Backend, &sb.State, &sb.SourcePath, &sb.SourceURL,
		&sb.BaseCommit, &sb.Rootfs, &sb.Detail, &sb.Network, &sb.CredsPort, &sb.EgressPort, &sb.CredsToken, &sb.Agents,
		&sb.SyncMode, &sb.Runtime, &idle, &sb.Image, &sb.OwnerID, &created, &updated)
	sb.IdleStop = time.Duration(idle) * time.Second
	sb.CreatedAt = time.Unix(0, created)
	sb.UpdatedAt = time.Unix(0, updated)
	return sb, err
}

// CreateSandbox inserts a new sandbox; ErrNameTaken if the name is in use.
func (s *Store) CreateSandbox(ctx context.Context, sb Sandbox) error {
	t := now()
	if sb.Network == "" {
		sb.Network = "closed"
	}
	if sb.SyncMode == "" {
		sb.SyncMode = "manual"
	}
	_, err := s.db.ExecContext(ctx, "INSERT INTO sandboxes ("+sandboxCols+") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
		sb.ID, sb.Name, sb.Backend, sb.State, sb.SourcePath, sb.SourceURL, sb.BaseCommit, sb.Rootfs, sb.Detail,
		sb.Network, sb.CredsPort, sb.EgressPort, sb.CredsToken, sb.Agents, sb.SyncMode, sb.Runtime, int64(sb.IdleStop/time.Second), sb.Image, sb.OwnerID, t, t)
	if err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed: sandboxes.name") {
		return fmt.Errorf("sandbox %q: %w", sb.Name, ErrNameTaken)
	}
	if err != nil {
		return fmt.Errorf("insert sandbox %q: %w", sb.Name, err)
	}
	return nil
}

// GetSandbox finds a sandbox by name.
func (s *Store) GetSandbox(ctx context.Context, name string) (Sandbox, error) {
	sb, err := scanSandbox(s.db.QueryRowContext(ctx, "SELECT "+sandboxCols+" FROM sandboxes WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return sb, fmt.Errorf("sandbox %q: %w", name, ErrNotFound)
	}
	return sb, err
}

// ListSandboxes returns every sandbox, oldest first.
func (s *Store) ListSandboxes(ctx context.Context) ([]Sandbox, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+sandboxCols+" FROM sandboxes ORDER BY created_at, name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Sandbox
	for rows.Next() {
		sb, err := scanSandbox(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sb)
	}
	return out, rows.Err()
}

// UpdateSandbox writes every mutable field of sb (found by ID).
func (s *Store) UpdateSandbox(ctx context.Context, sb Sandbox) error {
	if sb.SyncMode == "" {
		sb.SyncMode = "manual"
	}
	res, err := s.db.ExecContext(ctx, `UPDATE sandboxes SET state = ?, source_path = ?, source_url = ?,
		base_commit = ?, rootfs = ?, detail = ?, sync_mode = ?, image = ?, updated_at = ? WHERE id = ?`,
		sb.State, sb.SourcePath, sb.SourceURL, sb.BaseCommit, sb.Rootfs, sb.Detail, sb.SyncMode, sb.Image, now(), sb.ID)
	if err != nil {
		return fmt.Errorf("update sandbox %q: %w", sb.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sandbox %q: %w", sb.Name, ErrNotFound)
	}
	return nil
}

// DeleteSandbox removes a sandbox and what belongs to it; its events and usage stay, as history.
func (s *Store) DeleteSandbox(ctx context.Context, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM syncs WHERE sandbox_id = ?", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE sandbox_id = ?", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM net_rules WHERE scope = ?", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM net_denials WHERE sandbox_id = ?", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM net_learned WHERE sandbox_id = ?", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM net_learning WHERE sandbox_id = ?", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM budgets WHERE sandbox_id = ?", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM checkpoints WHERE sandbox_id = ?", id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM sandboxes WHERE id = ?", id); err != nil {
		return err
	}
	return tx.Commit()
}
