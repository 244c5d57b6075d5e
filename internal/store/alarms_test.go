package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// Alarms survive a restart, are kept once while they stand, and stand until cleared.
func TestAlarms(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := Alarm{SandboxID: "id1", Sandbox: "one", Session: "main", Kind: "proc-root", Source: "transcript", Detail: "Bash reaches /proc/1/root"}
	if _, added, err := s.AddAlarm(ctx, a); err != nil || !added {
		t.Fatalf("add: %v %v", added, err)
	}
	if _, added, _ := s.AddAlarm(ctx, a); added {
		t.Error("the same standing alarm was added twice")
	}
	b := a
	b.Kind, b.Detail = "control-file", "control file changed: /workspace/.git/hooks/pre-commit"
	if _, _, err := s.AddAlarm(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddAlarm(ctx, Alarm{SandboxID: "id2", Sandbox: "two", Kind: "dns-data", Source: "egress", Detail: "x"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	counts, err := s.StandingAlarms(ctx)
	if err != nil || counts["id1"] != 2 || counts["id2"] != 1 {
		t.Fatalf("after a restart: %v %v", counts, err)
	}
	list, _ := s.Alarms(ctx, "id1", false)
	if len(list) != 2 || list[0].Detail != a.Detail || list[0].Session != "main" {
		t.Fatalf("alarms %+v", list)
	}
	if n, err := s.ClearAlarms(ctx, "id1", list[0].ID); err != nil || n != 1 {
		t.Fatalf("clear one: %d %v", n, err)
	}
	if n, _ := s.ClearAlarms(ctx, "id1", list[0].ID); n != 0 {
		t.Error("a cleared alarm was cleared again")
	}
	if _, added, _ := s.AddAlarm(ctx, a); !added {
		t.Error("the same finding after a clear raised nothing")
	}
	if n, _ := s.ClearAlarms(ctx, "id1", 0); n != 2 {
		t.Errorf("clear all: %d, want 2", n)
	}
	counts, _ = s.StandingAlarms(ctx)
	if counts["id1"] != 0 || counts["id2"] != 1 {
		t.Errorf("after clearing: %v", counts)
	}
	all, _ := s.Alarms(ctx, "id1", true)
	if len(all) != 3 || all[0].Cleared.IsZero() {
		t.Errorf("all: %+v", all)
	}
}

// A sandbox that raises alarms by the thousand keeps MaxStandingAlarms standing: it is
// flagged, and neither the database nor the notifications grow with it. Clearing them
// makes room again; another sandbox is not held back by it.
func TestAlarmsBounded(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	added := 0
	for i := range MaxStandingAlarms + 50 {
		_, ok, err := s.AddAlarm(ctx, Alarm{SandboxID: "id1", Sandbox: "one", Kind: "control-file", Source: "files",
			Detail: fmt.Sprintf("control file changed: /workspace/.git/hooks/h%d (a git hook)", i)})
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			added++
		}
	}
	if counts, _ := s.StandingAlarms(ctx); added != MaxStandingAlarms || counts["id1"] != MaxStandingAlarms {
		t.Fatalf("added %d, standing %v: want %d", added, counts, MaxStandingAlarms)
	}
	if _, ok, _ := s.AddAlarm(ctx, Alarm{SandboxID: "id2", Sandbox: "two", Kind: "dns-data", Source: "egress", Detail: "x"}); !ok {
		t.Error("another sandbox's alarm was held back")
	}
	if _, err := s.ClearAlarms(ctx, "id1", 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.AddAlarm(ctx, Alarm{SandboxID: "id1", Sandbox: "one", Kind: "proc-root", Source: "transcript", Detail: "y"}); !ok {
		t.Error("no alarm raised after the standing ones were cleared")
	}
}
