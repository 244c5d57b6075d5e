package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// TestRenameMovesCheckpoints: a renamed session's checkpoints are listed under its new
// name, in the same write as the rename; another session's stay as they are.
func TestRenameMovesCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateSandbox(ctx, Sandbox{ID: "sb1", Name: "repo", Backend: "bwrap", State: "running"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"worker", "other"} {
		if err := s.CreateSession(ctx, Session{SandboxID: "sb1", Name: name, Agent: "shell"}); err != nil {
			t.Fatal(err)
		}
	}
	for i, session := range []string{"worker", "other", "worker"} {
		if err := s.AddCheckpoint(ctx, "sb1", wire.Checkpoint{Seq: i + 1, Sandbox: "repo", Session: session, Turn: i + 1, Kind: wire.CheckpointTurn}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RenameSession(ctx, "sb1", "worker", "builder"); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListCheckpoints(ctx, "sb1", "builder")
	if err != nil || len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 3 || got[0].Session != "builder" || got[1].Session != "builder" {
		t.Fatalf("builder's checkpoints after the rename: %+v %v", got, err)
	}
	if old, _ := s.ListCheckpoints(ctx, "sb1", "worker"); len(old) != 0 {
		t.Errorf("worker still has checkpoints: %+v", old)
	}
	if other, _ := s.ListCheckpoints(ctx, "sb1", "other"); len(other) != 1 || other[0].Session != "other" {
		t.Errorf("other's checkpoints: %+v", other)
	}
}
