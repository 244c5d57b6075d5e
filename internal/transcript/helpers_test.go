package transcript

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// parsers are the parsers by agent, for tests that run on each.
var parsers = map[string]func(r *bytes.Reader) ([]Entry, error){
	"claude": func(r *bytes.Reader) ([]Entry, error) { return ParseClaude(r) },
	"codex":  func(r *bytes.Reader) ([]Entry, error) { return ParseCodex(r) },
	"gemini": func(r *bytes.Reader) ([]Entry, error) { return ParseGemini(r) },
}

// parseFile parses a testdata transcript with the named parser.
func parseFile(t *testing.T, agent, name string) []Entry {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := parsers[agent](bytes.NewReader(data))
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return entries
}

// checkEntries compares entries with want, ignoring times (which must be
// set and in order) and the layout of JSON input.
func checkEntries(t *testing.T, got, want []Entry) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) {
			t.Errorf("entry %d: got %d entries, want %d", i, len(got), len(want))
			return
		}
		g, w := got[i], want[i]
		if g.Time.IsZero() || (i > 0 && g.Time.Before(got[i-1].Time)) {
			t.Errorf("entry %d: time %v is missing or out of order", i, g.Time)
		}
		if w.Input != nil {
			var gi, wi any
			if json.Unmarshal(g.Input, &gi) != nil || json.Unmarshal(w.Input, &wi) != nil || !jsonEqual(gi, wi) {
				t.Errorf("entry %d: input %s, want %s", i, g.Input, w.Input)
			}
		}
		g.Time, g.Input, w.Input = w.Time, nil, nil
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if string(gj) != string(wj) {
			t.Errorf("entry %d:\n got %s\nwant %s", i, gj, wj)
		}
	}
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// raw is a JSON literal, for wanted tool inputs.
func raw(s string) json.RawMessage { return json.RawMessage(s) }
