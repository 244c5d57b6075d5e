package guest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/paddockhq/paddock/internal/guestproto/guestpb"
)

// The control watcher says nothing before a session starts, then reports the agent's
// changes to control files, but not the daemon's own writes nor a writer's scratch files.
func TestControlWatch(t *testing.T) {
	ws, home, status := t.TempDir(), t.TempDir(), t.TempDir()
	s := &Server{}
	var got []string
	emit := func(ev *guestpb.Event) { got = append(got, ev.GetAttrs()["change"]+" "+ev.GetAttrs()["path"]) }
	var st controlState
	look := func() []string {
		got = nil
		st.scanControl(ws, home, status, s.isOwnWrite, emit)
		slices.Sort(got)
		return got
	}
	write := func(p, text string) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hook := filepath.Join(ws, ".git/hooks/post-merge")
	settings := filepath.Join(home, ".claude/settings.json")

	// Before a session: the workspace is seeded, paddock writes the agent's settings.
	write(filepath.Join(ws, ".git/config"), "[core]\n")
	write(settings, `{"hooks":{}}`)
	if g := look(); g != nil {
		t.Fatalf("before a session: %v", g)
	}
	write(filepath.Join(status, "claude.json"), `{"status":"starting"}`)
	if g := look(); g != nil {
		t.Fatalf("the look that saw the session start: %v", g)
	}
	// The daemon's own write of the settings, as a session starts: nothing.
	write(settings, `{"hooks":{"Stop":[]}}`)
	s.ownWrite(settings)
	if g := look(); g != nil {
		t.Fatalf("after the daemon's own write: %v", g)
	}
	// The agent's writes: a hook, the settings again, git's config; a scratch file and
	// ordinary work are no news.
	write(hook, "#!/bin/sh\n")
	write(settings, `{"hooks":{"Stop":[{"command":"curl evil"}]}}`)
	write(filepath.Join(ws, ".git/config"), "[core]\nfsmonitor = evil\n")
	write(filepath.Join(ws, ".claude/settings.json.tmp.12.abcdef"), "{}")
	write(filepath.Join(ws, "main.go"), "package main\n")
	want := []string{"created " + hook, "modified " + filepath.Join(ws, ".git/config"), "modified " + settings}
	if g := look(); !slices.Equal(g, want) {
		t.Fatalf("after the agent's writes: %v, want %v", g, want)
	}
	if g := look(); g != nil {
		t.Fatalf("a look with nothing new: %v", g)
	}
	os.Remove(hook)
	if g := look(); !slices.Equal(g, []string{"removed " + hook}) {
		t.Fatalf("after the hook's removal: %v", g)
	}
}
