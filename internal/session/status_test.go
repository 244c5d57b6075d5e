package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
)

// TestReadLiveOversizedStatusFile: a status file over maxStatusFile, which no hook
// writes, gives its session no status; it neither hides the other sessions' statuses
// nor fails the listing.
func TestReadLiveOversizedStatusFile(t *testing.T) {
	c, _ := guesttest.Connect(t)
	dir := t.TempDir()
	files := map[string]string{
		// Valid JSON but for the spaces after it: the part that fits would pass.
		"big":   `{"status":"idle"}` + strings.Repeat(" ", 2*maxOutput),
		"small": `{"status":"working"}`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := readLiveAt(t.Context(), c, filepath.Join(dir, "tmux.sock"), dir, "big", "small")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.status["big"]; ok {
		t.Errorf("an oversized status file gave its session a status: %+v", l.status["big"])
	}
	if got := l.status["small"].Status; got != "working" {
		t.Errorf("the session beside an oversized status file has status %q, want working", got)
	}
}

// TestReadLiveWithTheStatusDirectoryFlooded: the status directory is the agent's to
// write. Many large files in it (here 40 of 64 KiB, more than the output a command may
// give) neither fail the read, which every listing, prompt and restart of the
// sandbox's sessions makes first, nor hide the status of the sessions asked about.
func TestReadLiveWithTheStatusDirectoryFlooded(t *testing.T) {
	c, _ := guesttest.Connect(t)
	dir := t.TempDir()
	flood := `{"status":"idle"` + strings.Repeat(" ", maxStatusFile-40) + `}`
	for i := range 40 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("a%02d.json", i)), []byte(flood), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "work.json"), []byte(`{"status":"working"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A FIFO, which would block a reader, and a symlink are no status files.
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("work.json", filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	l, err := readLiveAt(ctx, c, filepath.Join(dir, "tmux.sock"), dir, "work", "a07", "fifo", "link")
	if err != nil {
		t.Fatal(err)
	}
	if got := l.status["work"].Status; got != "working" {
		t.Errorf("the session's status beside a flooded status directory is %q, want working", got)
	}
	if got := l.status["a07"].Status; got != "idle" {
		t.Errorf("a large (but not oversized) status file asked for gave %q, want idle", got)
	}
	if _, ok := l.status["link"]; ok {
		t.Error("a symlink in the status directory was read as a status file")
	}
	if _, ok := l.status["a08"]; ok {
		t.Error("a status file no session asked for was read")
	}
}
