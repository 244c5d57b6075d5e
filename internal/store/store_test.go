package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	if _, err := s.AddEvent(ctx, Event{SandboxID: "abc", Sandbox: "myrepo", Kind: "created", Message: "from /src/myrepo"}); err != nil {
		t.Fatal(err)
	}
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
	if evs, _ := s.Events(ctx, EventQuery{Sandbox: "myrepo"}); len(evs) != 1 || evs[0].Kind != "created" {
		t.Fatalf("events: %+v", evs)
	}
	if err := s.DeleteSandbox(ctx, "abc"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSandbox(ctx, "myrepo"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	// Its events stay, as history.
	if evs, _ := s.Events(ctx, EventQuery{Sandbox: "myrepo"}); len(evs) != 1 {
		t.Fatalf("events after removing their sandbox: %+v", evs)
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

func TestEvents(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := time.Now().Add(-time.Hour)
	var seqs []int64
	for i, e := range []Event{
		{Sandbox: "a", Kind: "created", Time: base},
		{Sandbox: "b", Kind: "created", Time: base.Add(time.Minute)},
		{Sandbox: "a", Session: "w", Kind: "session-status", Attrs: map[string]string{"status": "idle"}, Time: base.Add(2 * time.Minute)},
		{Sandbox: "a", Kind: "stopped", Time: base.Add(3 * time.Minute)},
	} {
		got, err := s.AddEvent(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && got.Seq <= seqs[i-1] {
			t.Fatalf("seq %d after %d", got.Seq, seqs[i-1])
		}
		seqs = append(seqs, got.Seq)
	}
	kinds := func(evs []Event) string {
		var k []string
		for _, e := range evs {
			k = append(k, e.Sandbox+":"+e.Kind)
		}
		return strings.Join(k, " ")
	}
	tests := []struct {
		q    EventQuery
		want string
	}{
		{EventQuery{}, "a:created b:created a:session-status a:stopped"},
		{EventQuery{Sandbox: "a"}, "a:created a:session-status a:stopped"},
		{EventQuery{AfterSeq: seqs[1]}, "a:session-status a:stopped"},
		{EventQuery{Since: base.Add(90 * time.Second)}, "a:session-status a:stopped"},
		{EventQuery{Until: base.Add(time.Minute)}, "a:created b:created"},
		{EventQuery{Sandbox: "a", Limit: 1}, "a:created"},
		{EventQuery{Sandbox: "ghost"}, ""},
	}
	for _, tt := range tests {
		evs, err := s.Events(ctx, tt.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := kinds(evs); got != tt.want {
			t.Errorf("Events(%+v) = %q, want %q", tt.q, got, tt.want)
		}
	}
	evs, _ := s.Events(ctx, EventQuery{AfterSeq: seqs[1], Limit: 1})
	if len(evs) != 1 || evs[0].Session != "w" || evs[0].Attrs["status"] != "idle" || !evs[0].Time.Equal(base.Add(2*time.Minute)) {
		t.Errorf("stored event %+v", evs)
	}
	// The newest n events, of all or of one sandbox, begin after SeqBeforeLast.
	for _, tt := range []struct {
		sandbox string
		n       int
		want    string
	}{
		{"", 2, "a:session-status a:stopped"},
		{"b", 5, "b:created"},
		{"a", 2, "a:session-status a:stopped"},
		{"", 10, "a:created b:created a:session-status a:stopped"},
	} {
		after, err := s.SeqBeforeLast(ctx, tt.sandbox, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		evs, _ := s.Events(ctx, EventQuery{Sandbox: tt.sandbox, AfterSeq: after})
		if got := kinds(evs); got != tt.want {
			t.Errorf("the last %d of %q = %q, want %q", tt.n, tt.sandbox, got, tt.want)
		}
	}
	if ok, _ := s.HasEvents(ctx, "b"); !ok {
		t.Error("HasEvents(b) = false")
	}
	if n, err := s.PruneEvents(ctx, 2); err != nil || n != 2 {
		t.Fatalf("PruneEvents = %d, %v", n, err)
	}
	if evs, _ := s.Events(ctx, EventQuery{}); kinds(evs) != "a:session-status a:stopped" {
		t.Errorf("after pruning: %q", kinds(evs))
	}
}
