package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	l, err := readLiveAt(t.Context(), c, filepath.Join(dir, "tmux.sock"), dir)
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
