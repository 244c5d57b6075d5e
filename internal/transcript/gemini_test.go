package transcript

import (
	"strings"
	"testing"
)

// geminiRecords are message records shaped as the Gemini CLI's
// ChatRecordingService writes them. They are written by hand, not
// recorded: see ParseGemini.
var geminiRecords = []string{
	`{"id":"u1","timestamp":"2026-01-01T00:00:00Z","type":"user","content":"RUN: ls"}`,
	`{"id":"g1","timestamp":"2026-01-01T00:00:01Z","type":"gemini","content":"Running it.","model":"gemini-test",` +
		`"toolCalls":[{"id":"c1","name":"run_shell_command","args":{"command":"ls"},"status":"success","timestamp":"2026-01-01T00:00:02Z",` +
		`"result":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"a.txt"}}}]},` +
		`{"id":"c2","name":"write_file","args":{"file_path":"/w/b.txt","content":"x"},"status":"success","timestamp":"2026-01-01T00:00:03Z",` +
		`"result":[{"functionResponse":{"id":"c2","name":"write_file","response":{"output":"wrote"}}}]},` +
		`{"id":"c3","name":"replace","args":{"file_path":"/w/c.txt"},"status":"error","timestamp":"2026-01-01T00:00:04Z",` +
		`"result":[{"functionResponse":{"id":"c3","name":"replace","response":{"error":"no match"}}}]}],` +
		`"tokens":{"input":100,"output":10,"cached":30,"thoughts":5,"tool":0,"total":145}}`,
	`{"id":"i1","timestamp":"2026-01-01T00:00:05Z","type":"info","content":"Request cancelled."}`,
	`{"id":"g2","timestamp":"2026-01-01T00:00:06Z","type":"gemini","content":[{"text":"DONE: "},{"text":"a.txt"}]}`,
	// A turn that failed, as Gemini CLI 0.61.0 recorded its model answering 400.
	`{"id":"u2","timestamp":"2026-01-01T00:00:07Z","type":"user","content":"this fails"}`,
	`{"id":"e1","timestamp":"2026-01-01T00:00:08Z","type":"error","content":"[API Error: {\"error\":{\"code\":400}}]"}`,
}

func TestParseGemini(t *testing.T) {
	want := []Entry{
		{Kind: KindUser, Text: "RUN: ls"},
		{Kind: KindAssistant, Text: "Running it.", Usage: &Usage{InputTokens: 70, OutputTokens: 15, CacheReadTokens: 30}},
		{Kind: KindToolCall, Tool: "run_shell_command", CallID: "c1", Input: raw(`{"command":"ls"}`)},
		{Kind: KindToolResult, Tool: "run_shell_command", CallID: "c1", Output: "a.txt"},
		{Kind: KindToolCall, Tool: "write_file", CallID: "c2", Input: raw(`{"file_path":"/w/b.txt","content":"x"}`)},
		{Kind: KindToolResult, Tool: "write_file", CallID: "c2", Output: "wrote"},
		{Kind: KindFileChange, Tool: "write_file", CallID: "c2", Path: "/w/b.txt"},
		{Kind: KindToolCall, Tool: "replace", CallID: "c3", Input: raw(`{"file_path":"/w/c.txt"}`)},
		{Kind: KindToolResult, Tool: "replace", CallID: "c3", Output: "no match"},
		{Kind: KindAssistant, Text: "DONE: \na.txt"},
		{Kind: KindUser, Text: "this fails"},
		{Kind: KindError, Text: `[API Error: {"error":{"code":400}}]`},
	}
	// An earlier record of g1, before its tool calls finished, replaced by
	// the later one with the same id.
	partial := `{"id":"g1","timestamp":"2026-01-01T00:00:01Z","type":"gemini","content":"Running it."}`
	tests := map[string]string{
		"JSON Lines": strings.Join(append([]string{`{"sessionId":"s1","projectHash":"h","startTime":"2026-01-01T00:00:00Z"}`,
			geminiRecords[0], partial}, geminiRecords[1:]...), "\n"),
		"JSON document": `{"sessionId":"s1","projectHash":"h","startTime":"2026-01-01T00:00:00Z","messages":[` +
			strings.Join(geminiRecords, ",\n") + `]}`,
	}
	for name, input := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseGemini(strings.NewReader(input))
			if err != nil {
				t.Fatal(err)
			}
			checkEntries(t, got, want)
		})
	}
}
