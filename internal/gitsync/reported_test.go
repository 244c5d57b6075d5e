package gitsync

import (
	"maps"
	"os"
	"os/exec"
	"testing"
)

// TestSince: what a sync compares the fetched refs with. With no record, the refs found
// (as syncs always did); with one, each found ref's reported value, a ref the record lacks
// (fetched by a diff before any sync) or that the user deleted since counting as new.
func TestSince(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	g := &Git{Repo: repo}
	ns := Namespace("s")
	a, b := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	found := map[string]string{ns + "main": b, ns + "wip": b, ns + "new": a}
	if got, recorded := g.since("s", found); recorded || !maps.Equal(got, found) {
		t.Errorf("no record: %v (recorded %v), want the refs found", got, recorded)
	}
	// A reader that is not a sync writes down the refs found, once.
	if err := g.reportedOnce("s", map[string]string{ns + "main": a, ns + "gone": a}); err != nil {
		t.Fatal(err)
	}
	if err := g.reportedOnce("s", found); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ns + "main": a}
	if got, recorded := g.since("s", found); !recorded || !maps.Equal(got, want) {
		t.Errorf("recorded: %v (recorded %v), want %v", got, recorded, want)
	}
	// A sync's report replaces it; lines that are not a ref of the sandbox are ignored.
	if err := g.report("s", found); err != nil {
		t.Fatal(err)
	}
	p, _ := g.reportedPath("s")
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(a + " refs/heads/main\nnot-an-id " + ns + "x\n")
	f.Close()
	if got, _ := g.since("s", found); !maps.Equal(got, found) {
		t.Errorf("after a report: %v, want %v", got, found)
	}
}
