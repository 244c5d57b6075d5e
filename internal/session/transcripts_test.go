package session

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/guestclient/guesttest"
	"github.com/paddockhq/paddock/internal/transcript"
)

// parseLines is a transcript parser: one user entry per line.
func parseLines(r io.Reader) ([]transcript.Entry, error) {
	data, err := io.ReadAll(r)
	var entries []transcript.Entry
	for line := range strings.Lines(string(data)) {
		entries = append(entries, transcript.Entry{Kind: "user", Text: strings.TrimSpace(line)})
	}
	return entries, err
}

// TestTranscriptTooLarge: a transcript over maxTranscript, in a file (a sparse one,
// which costs the agent nothing) or printed by the agent's command, is an error naming
// it, for a listing too; a transcript that fits is read whole.
func TestTranscriptTooLarge(t *testing.T) {
	c, _ := guesttest.Connect(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "small.jsonl"), []byte("hello\nthere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.jsonl")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, maxTranscript+1); err != nil {
		t.Fatal(err)
	}
	inFile := &agents.Agent{Name: "f", Binary: "f", Command: []string{"f"}, Transcript: dir + "/{id}.jsonl", Parse: parseLines}
	printed := &agents.Agent{Name: "p", Binary: "p", Command: []string{"p"}, Parse: parseLines,
		TranscriptCommand: []string{"head", "-c", strconv.Itoa(maxTranscript + 1), "/dev/zero"}}
	tests := []struct {
		name    string
		agent   *agents.Agent
		id      string
		cheap   bool
		wantErr string // "" when the transcript is read whole
	}{
		{"a file that fits", inFile, "small", false, ""},
		{"a file too large", inFile, "big", false, big + " in the sandbox is too large"},
		{"a file too large, for a listing", inFile, "big", true, big + " in the sandbox is too large"},
		{"printed too large", printed, "x", false, "the transcript head -c prints is too large"},
	}
	for _, tt := range tests {
		entries, ok, err := agentTranscript(t.Context(), c, tt.agent, agents.Session{ResumeID: tt.id, Dir: dir}, tt.cheap)
		switch {
		case tt.wantErr == "" && (err != nil || !ok || len(entries) != 2):
			t.Errorf("%s: %d entries, ok %v, err %v", tt.name, len(entries), ok, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: %d entries, err %v; want an error saying %q", tt.name, len(entries), err, tt.wantErr)
		}
	}
}
