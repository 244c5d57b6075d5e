package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestRunsByIDAndPrefix: a run is found by its id or a unique prefix; a prefix two runs
// share, or one with LIKE's wildcards, finds none; a daemon's start marks the runs left
// running as interrupted, and only those.
func TestRunsByIDAndPrefix(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	for i, id := range []string{"rab12", "rab34", "rcd56"} {
		status := "done"
		if i == 0 {
			status = "running"
		}
		if err := s.AddRun(t.Context(), Run{ID: id, SandboxID: "sb1", Sandbox: "repo", Provider: "anthropic", Model: "m",
			Title: id, Status: status, Created: now.Add(time.Duration(i) * time.Second), Updated: now, Conversation: "[]"}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := s.GetRun(t.Context(), "rcd"); err != nil || r.ID != "rcd56" {
		t.Errorf("prefix rcd: %v %v", r.ID, err)
	}
	if r, err := s.GetRun(t.Context(), "rab34"); err != nil || r.ID != "rab34" {
		t.Errorf("id rab34: %v %v", r.ID, err)
	}
	for _, id := range []string{"rab", "r%", "r_b12", "nope"} {
		if _, err := s.GetRun(t.Context(), id); !errors.Is(err, ErrNoRun) {
			t.Errorf("%q: %v", id, err)
		}
	}
	if n, err := s.InterruptRuns(t.Context(), "gone"); err != nil || n != 1 {
		t.Fatalf("interrupted %d: %v", n, err)
	}
	list, err := s.Runs(t.Context(), "repo")
	if err != nil || len(list) != 3 || list[0].ID != "rcd56" || list[2].Status != "interrupted" || list[1].Status != "done" {
		t.Fatalf("runs: %+v %v", list, err)
	}
	if seq, err := s.AddRunStep(t.Context(), "rab12", RunStep{Kind: "prompt", Input: "x", Started: now}); err != nil || seq != 1 {
		t.Fatalf("step: %d %v", seq, err)
	}
	if seq, _ := s.AddRunStep(t.Context(), "rab12", RunStep{Kind: "tool", Name: "read_file", Started: now, Duration: time.Second}); seq != 2 {
		t.Fatalf("second step seq %d", seq)
	}
	steps, err := s.RunSteps(t.Context(), "rab12")
	if err != nil || len(steps) != 2 || steps[1].Duration != time.Second || steps[1].Name != "read_file" {
		t.Fatalf("steps: %+v %v", steps, err)
	}
}
