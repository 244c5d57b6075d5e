package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestPushSubscriptions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a, err := s.AddPushSubscription(ctx, PushSubscription{Endpoint: "https://push.example/a", P256DH: "k1", Auth: "a1", Label: "Chrome", Created: now})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.AddPushSubscription(ctx, PushSubscription{Endpoint: "https://push.example/b", P256DH: "k2", Auth: "a2", Created: now})
	if err != nil || b == a {
		t.Fatalf("second subscription: %d %v", b, err)
	}
	// The same browser subscribing again (new keys) keeps its id.
	again, err := s.AddPushSubscription(ctx, PushSubscription{Endpoint: "https://push.example/a", P256DH: "k3", Auth: "a3", Label: "Chrome 2", Created: now})
	if err != nil || again != a {
		t.Fatalf("resubscribe: id %d (want %d) %v", again, a, err)
	}
	if err := s.TouchPushSubscription(ctx, a, now); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	subs, err := s.PushSubscriptions(ctx)
	if err != nil || len(subs) != 2 || subs[0].P256DH != "k3" || subs[0].Label != "Chrome 2" || subs[0].LastSent.IsZero() || !subs[1].LastSent.IsZero() {
		t.Fatalf("subscriptions after a restart: %+v %v", subs, err)
	}
	if err := s.DeletePushSubscription(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePushSubscription(ctx, b); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
}
