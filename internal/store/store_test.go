package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestMigrationsAndSandboxes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := migrations()
	if v, _ := s.Version(ctx); v != len(ms) {
		t.Fatalf("version %d after migrating, want %d", v, len(ms))
	}
	sb := Sandbox{ID: "abc", Name: "myrepo", Backend: "bwrap", State: "running", SourcePath: "/src/myrepo"}
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSandbox(ctx, Sandbox{ID: "def", Name: "myrepo", Backend: "bwrap", State: "running"}); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("duplicate name: %v, want ErrNameTaken", err)
	}
	s.AddEvent(ctx, "abc", "created", "from /src/myrepo")
	s.Close()

	// Reopening applies nothing twice and keeps the data.
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.GetSandbox(ctx, "myrepo")
	if err != nil || got.SourcePath != "/src/myrepo" || got.CreatedAt.IsZero() {
		t.Fatalf("after reopening: %+v %v", got, err)
	}
	got.State = "stopped"
	if err := s.UpdateSandbox(ctx, got); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.ListSandboxes(ctx); len(list) != 1 || list[0].State != "stopped" {
		t.Fatalf("list: %+v", list)
	}
	if evs, _ := s.Events(ctx, "abc"); len(evs) != 1 || evs[0].Kind != "created" {
		t.Fatalf("events: %+v", evs)
	}
	if err := s.DeleteSandbox(ctx, "abc"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSandbox(ctx, "myrepo"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if evs, _ := s.Events(ctx, "abc"); len(evs) != 0 {
		t.Fatalf("events survived their sandbox: %+v", evs)
	}
}

func TestNewerDatabaseIsRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.db.ExecContext(ctx, "PRAGMA user_version = 999")
	s.Close()
	if _, err := Open(ctx, path); err == nil {
		t.Fatal("a database from a newer paddock was opened")
	}
}
