package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

func TestRepeatedDenialsAreCounted(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Unix(1_700_000_000, 0)
	d := NetDenial{Time: t0, SandboxID: "abc", Host: "example.com", Port: 443, Reason: "not on the allowlist"}
	if err := s.AddNetDenial(ctx, d); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 100; i++ {
		d.Time = t0.Add(time.Duration(i) * 100 * time.Millisecond)
		if err := s.RepeatNetDenial(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	d.Time = t0.Add(20 * time.Second)
	d.Count = 5 // several repeats written at once
	if err := s.RepeatNetDenial(ctx, d); err != nil {
		t.Fatal(err)
	}
	// Another port is another destination.
	other := NetDenial{Time: t0, SandboxID: "abc", Host: "example.com", Port: 8443, Reason: "not on the allowlist"}
	if err := s.RepeatNetDenial(ctx, other); err != nil { // none to count against: recorded anew
		t.Fatal(err)
	}
	list, err := s.NetDenials(ctx, "abc", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("%d denials, want 2: %+v", len(list), list)
	}
	if got := list[0]; got.Count != 105 || got.Port != 443 || !got.Time.Equal(t0) || !got.LastSeen.Equal(t0.Add(20*time.Second)) {
		t.Errorf("first denial %+v, want count 105 from %v to %v", got, t0, t0.Add(20*time.Second))
	}
	if got := list[1]; got.Count != 1 || got.Port != 8443 || !got.LastSeen.Equal(t0) {
		t.Errorf("second denial %+v, want count 1 on port 8443", got)
	}
	if one, err := s.NetDenial(ctx, list[0].ID); err != nil || one.Count != 105 {
		t.Errorf("NetDenial(%d) = %+v, %v", list[0].ID, one, err)
	}
}

func TestDenialsAreBoundedPerSandbox(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < NetDenialsKept+500; i++ {
		if err := s.AddNetDenial(ctx, NetDenial{Time: time.Now(), SandboxID: "abc", Host: fmt.Sprintf("h%d.example", i), Port: 443, Reason: "r"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		if err := s.AddNetDenial(ctx, NetDenial{Time: time.Now(), SandboxID: "def", Host: fmt.Sprintf("h%d.example", i), Port: 443, Reason: "r"}); err != nil {
			t.Fatal(err)
		}
	}
	abc, _ := s.NetDenials(ctx, "abc", 0)
	if len(abc) != NetDenialsKept || abc[0].Host != "h500.example" || abc[len(abc)-1].Host != fmt.Sprintf("h%d.example", NetDenialsKept+499) {
		t.Fatalf("sandbox abc keeps %d denials, %s to %s; want the newest %d", len(abc), abc[0].Host, abc[len(abc)-1].Host, NetDenialsKept)
	}
	if def, _ := s.NetDenials(ctx, "def", 0); len(def) != 10 {
		t.Fatalf("sandbox def keeps %d denials, want its 10: another sandbox's must not push them out", len(def))
	}

	// Removing a sandbox removes its denials, and only its.
	if err := s.DeleteSandbox(ctx, "abc"); err != nil {
		t.Fatal(err)
	}
	if abc, _ := s.NetDenials(ctx, "abc", 0); len(abc) != 0 {
		t.Errorf("%d denials left after removing their sandbox", len(abc))
	}
	if all, _ := s.NetDenials(ctx, "", 0); len(all) != 10 {
		t.Errorf("%d denials in all, want def's 10", len(all))
	}
}

// TestDenialMigration checks that a database made before denials were counted keeps
// each sandbox's newest denials, each counted once.
func TestDenialMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // BEGIN and COMMIT on the one connection
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	const before = 9 // the last version without counts
	for _, m := range ms[:before] {
		if _, err := db.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", before)); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	if _, err := db.Exec("BEGIN"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < NetDenialsKept+200; i++ {
		if _, err := db.Exec("INSERT INTO net_denials (time, sandbox_id, host, port, reason) VALUES (?,?,?,?,?)",
			t0.Add(time.Duration(i)*time.Second).UnixNano(), "abc", fmt.Sprintf("h%d.example", i), 443, "r"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec("INSERT INTO net_denials (time, sandbox_id, host, port, reason) VALUES (?,?,?,?,?)", t0.UnixNano(), "def", "x.example", 80, "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("COMMIT"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	abc, _ := s.NetDenials(ctx, "abc", 0)
	if len(abc) != NetDenialsKept || abc[0].Host != "h200.example" || abc[0].Count != 1 || !abc[0].LastSeen.Equal(abc[0].Time) {
		t.Fatalf("after migrating, abc keeps %d denials, the oldest %+v; want the newest %d, each counted once", len(abc), abc[0], NetDenialsKept)
	}
	if def, _ := s.NetDenials(ctx, "def", 0); len(def) != 1 {
		t.Fatalf("after migrating, def keeps %d denials, want 1", len(def))
	}
}
