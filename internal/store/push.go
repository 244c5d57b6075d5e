package store

import (
	"context"
	"fmt"
	"time"
)

// PushSubscription is a browser's Web Push subscription.
type PushSubscription struct {
	ID       int64
	Endpoint string
	// P256DH and Auth are the subscription's keys, base64url as the browser gives them.
	P256DH, Auth string
	// Label says which browser it is, for people (its user agent, shortened).
	Label   string
	Created time.Time
	// LastSent is zero until a push to it succeeds.
	LastSent time.Time
}

// AddPushSubscription stores a subscription, or updates the keys and label of the one
// with the same endpoint (a browser subscribing again); it returns the id.
func (s *Store) AddPushSubscription(ctx context.Context, p PushSubscription) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO push_subscriptions (endpoint, p256dh, auth, label, created_at) VALUES (?,?,?,?,?)
		ON CONFLICT (endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth, label = excluded.label
		RETURNING id`, p.Endpoint, p.P256DH, p.Auth, p.Label, p.Created.UnixNano()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("save push subscription: %w", err)
	}
	return id, nil
}

// PushSubscriptions lists the subscriptions, oldest first.
func (s *Store) PushSubscriptions(ctx context.Context) ([]PushSubscription, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, endpoint, p256dh, auth, label, created_at, last_sent FROM push_subscriptions ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PushSubscription
	for rows.Next() {
		var p PushSubscription
		var created, sent int64
		if err := rows.Scan(&p.ID, &p.Endpoint, &p.P256DH, &p.Auth, &p.Label, &created, &sent); err != nil {
			return nil, err
		}
		p.Created = time.Unix(0, created)
		if sent != 0 {
			p.LastSent = time.Unix(0, sent)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// DeletePushSubscription removes a subscription; ErrNotFound when there is none.
func (s *Store) DeletePushSubscription(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM push_subscriptions WHERE id = ?", id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("push subscription %d: %w", id, ErrNotFound)
	}
	return nil
}

// TouchPushSubscription records a successful push.
func (s *Store) TouchPushSubscription(ctx context.Context, id int64, t time.Time) error {
	_, err := s.db.ExecContext(ctx, "UPDATE push_subscriptions SET last_sent = ? WHERE id = ?", t.UnixNano(), id)
	return err
}
