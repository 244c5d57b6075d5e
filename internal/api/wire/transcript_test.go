package wire

import (
	"encoding/json"
	"testing"
)

// TestInputText: a tool call's input reads as the agent wrote it after the daemon's
// JSON carried it (encoding/json writes < > & as \u003c \u003e \u0026), and only
// those escapes are undone.
func TestInputText(t *testing.T) {
	for _, tt := range []struct {
		name  string
		input string // the input as the agent's transcript holds it
		want  string
	}{
		{"a shell command", `{"command":"cd /w && make 2>&1 | tee <log"}`, `{"command":"cd /w && make 2>&1 | tee <log"}`},
		{"other escapes stay", `{"c":"a\"b\\c\n\u2028"}`, `{"c":"a\"b\\c\n\u2028"}`},
		{"an escaped backslash before u003e", `{"c":"\\u003e"}`, `{"c":"\\u003e"}`},
		{"free-form input is its text", `"*** Begin Patch\n*** Add File: a && b\n"`, "*** Begin Patch\n*** Add File: a && b\n"},
		{"no input", ``, ``},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Through the daemon's answer: encoded by encoding/json, decoded by the client.
			sent, err := json.Marshal(TranscriptEntry{Kind: EntryToolCall, Input: json.RawMessage(tt.input)})
			if tt.input == "" {
				sent, err = json.Marshal(TranscriptEntry{Kind: EntryToolCall})
			}
			if err != nil {
				t.Fatal(err)
			}
			var got TranscriptEntry
			if err := json.Unmarshal(sent, &got); err != nil {
				t.Fatal(err)
			}
			if s := got.InputText(); s != tt.want {
				t.Errorf("InputText() of %s = %q, want %q", sent, s, tt.want)
			}
		})
	}
}
