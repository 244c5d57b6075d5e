package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestTokensSessionsAndListener(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := s.CreateToken(ctx, Token{Name: "phone", Hash: []byte("h1"), ReadOnly: true, Created: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, Token{Name: "phone", Hash: []byte("h2"), Created: now}); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("a second token named phone: %v", err)
	}
	if err := s.TouchToken(ctx, "phone", now); err != nil {
		t.Fatal(err)
	}
	if err := s.AddWebSession(ctx, []byte("old"), 0, now.Add(-time.Hour), now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddWebSession(ctx, []byte("new"), 0, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetWebListener(ctx, WebListener{Listen: "127.0.0.1:7777"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetWebListener(ctx, WebListener{Listen: "0.0.0.0:8443", TLSCert: "/c.pem", TLSKey: "/k.pem"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// All of it survives a restart; an expired session was dropped when the next was made.
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tokens, err := s.Tokens(ctx)
	if err != nil || len(tokens) != 1 || !tokens[0].ReadOnly || string(tokens[0].Hash) != "h1" || tokens[0].LastUsed.IsZero() {
		t.Fatalf("tokens: %+v %v", tokens, err)
	}
	if _, _, err := s.WebSession(ctx, []byte("old")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired session: %v", err)
	}
	if exp, _, err := s.WebSession(ctx, []byte("new")); err != nil || exp.Before(now) {
		t.Fatalf("session: %v %v", exp, err)
	}
	if l, err := s.GetWebListener(ctx); err != nil || l != (WebListener{Listen: "0.0.0.0:8443", TLSCert: "/c.pem", TLSKey: "/k.pem"}) {
		t.Fatalf("listener: %+v %v", l, err)
	}

	if err := s.DeleteToken(ctx, "phone"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteToken(ctx, "phone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke twice: %v", err)
	}
	if err := s.DeleteWebSessions(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.WebSession(ctx, []byte("new")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("session after DeleteWebSessions: %v", err)
	}
	if err := s.DeleteWebListener(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetWebListener(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("listener after delete: %v", err)
	}
}
