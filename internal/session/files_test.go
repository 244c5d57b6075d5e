package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
)

func TestWithSection(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"a new file", "", "<!-- paddock -->\nnew\n<!-- /paddock -->\n"},
		{"the user's file kept, the section after it", "# mine\nkeep me", "# mine\nkeep me\n\n<!-- paddock -->\nnew\n<!-- /paddock -->\n"},
		{"the section replaced in place", "top\n<!-- paddock -->\nold\nlines\n<!-- /paddock -->\nbottom\n", "top\n<!-- paddock -->\nnew\n<!-- /paddock -->\nbottom\n"},
		{"another section left alone", "<!-- paddock-disposable -->\nnote\n<!-- /paddock-disposable -->\n",
			"<!-- paddock-disposable -->\nnote\n<!-- /paddock-disposable -->\n\n<!-- paddock -->\nnew\n<!-- /paddock -->\n"},
		{"an unclosed marker is not trusted", "<!-- paddock -->\nold\n", "<!-- paddock -->\nold\n\n<!-- paddock -->\nnew\n<!-- /paddock -->\n"},
	}
	for _, tt := range tests {
		if got := string(withSection([]byte(tt.text), "paddock", []byte("new\n"))); got != tt.want {
			t.Errorf("%s:\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}
}

// TestWriteFileOversized: an agent's file in the sandbox over maxAgentFile (a sparse
// one costs the agent nothing) is not read to merge into: writing it fails, naming it,
// and leaves it as it was.
func TestWriteFileOversized(t *testing.T) {
	c, _ := guesttest.Connect(t)
	dir := t.TempDir()
	tests := []struct {
		name string
		file agents.File
	}{
		{"a section of a memory file", agents.File{Path: filepath.Join(dir, "MEMORY.md"), Section: "paddock", Content: []byte("note\n")}},
		{"settings merged", agents.File{Path: filepath.Join(dir, "settings.json"), Merge: map[string]any{"a": 1}}},
	}
	for _, tt := range tests {
		if err := os.WriteFile(tt.file.Path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(tt.file.Path, maxAgentFile+1); err != nil {
			t.Fatal(err)
		}
		err := writeFile(t.Context(), c, tt.file)
		if err == nil || !strings.Contains(err.Error(), tt.file.Path+" in the sandbox is too large") {
			t.Errorf("%s: err %v", tt.name, err)
		}
		if fi, err := os.Stat(tt.file.Path); err != nil || fi.Size() != maxAgentFile+1 {
			t.Errorf("%s: the file changed: %v %v", tt.name, fi.Size(), err)
		}
	}
}
