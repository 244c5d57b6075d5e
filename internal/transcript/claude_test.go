package transcript

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestParseClaudeRecorded reads a transcript the real Claude Code 2.1.330
// wrote (see TestRecord): a Bash call, a Write call, and a plain turn, over
// three runs of one resumed session.
func TestParseClaudeRecorded(t *testing.T) {
	entries := parseFile(t, "claude", "testdata/claude.jsonl")
	notes := recordDir + "/notes.txt"
	created := "File created successfully at: " + notes + " (file state is current in your context — no need to Read it back)"
	checkEntries(t, entries, []Entry{
		{Kind: KindUser, Text: "RUN: echo hello-from-tool | tee marker.txt"},
		{Kind: KindAssistant, Text: "Running the command.", Usage: &Usage{InputTokens: 12372, OutputTokens: 25, CacheReadTokens: 64, CacheWriteTokens: 16}},
		{Kind: KindToolCall, Tool: "Bash", CallID: "toolu_modeltest_1", Input: raw(`{"command":"echo hello-from-tool | tee marker.txt","description":"run it"}`)},
		{Kind: KindToolResult, Tool: "Bash", CallID: "toolu_modeltest_1", Output: "hello-from-tool"},
		{Kind: KindAssistant, Text: "DONE: hello-from-tool", Usage: &Usage{InputTokens: 12453, OutputTokens: 6, CacheReadTokens: 64, CacheWriteTokens: 16}},
		{Kind: KindUser, Text: "WRITE: " + notes},
		{Kind: KindAssistant, Text: "Writing the file.", Usage: &Usage{InputTokens: 12498, OutputTokens: 28, CacheReadTokens: 64, CacheWriteTokens: 16}},
		{Kind: KindToolCall, Tool: "Write", CallID: "toolu_modeltest_3", Input: raw(`{"file_path":"` + notes + `","content":"written by modeltest\n"}`)},
		{Kind: KindToolResult, Tool: "Write", CallID: "toolu_modeltest_3", Output: created},
		{Kind: KindFileChange, Tool: "Write", CallID: "toolu_modeltest_3", Path: notes},
		{Kind: KindAssistant, Text: "DONE: " + created, Usage: &Usage{InputTokens: 12609, OutputTokens: 36, CacheReadTokens: 64, CacheWriteTokens: 16}},
		{Kind: KindUser, Text: "thanks"},
		{Kind: KindAssistant, Text: "ECHO: thanks", Usage: &Usage{InputTokens: 12674, OutputTokens: 4, CacheReadTokens: 64, CacheWriteTokens: 16}},
	})
	// The transcript repeats each response's usage on every content block's
	// line; the total must count each response once.
	s := Summarize(entries)
	want := Usage{InputTokens: 12372 + 12453 + 12498 + 12609 + 12674, OutputTokens: 25 + 6 + 28 + 36 + 4, CacheReadTokens: 5 * 64, CacheWriteTokens: 5 * 16}
	if s.Usage != want || s.Messages != 8 || len(s.Files) != 1 || s.Files[0] != notes {
		t.Errorf("summary %+v, want usage %+v, 8 messages, files [%s]", s, want, notes)
	}
}

// TestParseClaudeLines covers what the recording does not show.
func TestParseClaudeLines(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []Entry
	}{
		{
			name: "a failed Write changes no file",
			lines: []string{
				`{"type":"assistant","timestamp":"2026-01-01T00:00:00Z","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"/a","content":"x"}}]}}`,
				`{"type":"user","timestamp":"2026-01-01T00:00:01Z","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"denied"}]}]}}`,
			},
			want: []Entry{
				{Kind: KindToolCall, Tool: "Write", CallID: "t1", Input: raw(`{"file_path":"/a","content":"x"}`)},
				{Kind: KindToolResult, Tool: "Write", CallID: "t1", Output: "denied"},
			},
		},
		{
			name: "a turn that failed (Claude Code 2.1.330, its model answering 400)",
			lines: []string{
				`{"type":"user","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hello three"}}`,
				`{"type":"assistant","timestamp":"2026-01-01T00:00:05Z","message":{"id":"77ce3148","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"API Error: 400 modeltest: scripted 400"}]},"error":"unknown","isApiErrorMessage":true}`,
			},
			want: []Entry{
				{Kind: KindUser, Text: "hello three"},
				{Kind: KindError, Text: "API Error: 400 modeltest: scripted 400"},
			},
		},
		{
			name: "Edit and NotebookEdit change files; sidechain and meta lines are skipped",
			lines: []string{
				`{"type":"user","timestamp":"2026-01-01T00:00:00Z","isMeta":true,"message":{"content":"<local-command-caveat>x</local-command-caveat>"}}`,
				`{"type":"assistant","timestamp":"2026-01-01T00:00:01Z","isSidechain":true,"message":{"id":"s1","content":[{"type":"text","text":"subagent"}]}}`,
				`{"type":"assistant","timestamp":"2026-01-01T00:00:02Z","message":{"id":"m1","content":[{"type":"thinking","thinking":"hmm"}],"usage":{"input_tokens":1,"output_tokens":1}}}`,
				`{"type":"assistant","timestamp":"2026-01-01T00:00:03Z","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/e"}}],"usage":{"input_tokens":1,"output_tokens":9}}}`,
				`{"type":"assistant","timestamp":"2026-01-01T00:00:04Z","message":{"id":"m1","content":[{"type":"tool_use","id":"t2","name":"NotebookEdit","input":{"notebook_path":"/n.ipynb"}}],"usage":{"input_tokens":1,"output_tokens":9}}}`,
				`{"type":"user","timestamp":"2026-01-01T00:00:05Z","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"tool_result","tool_use_id":"t2","content":"ok"}]}}`,
				`{"type":"summary","summary":"compacted","leafUuid":"x"}`,
			},
			want: []Entry{
				{Kind: KindToolCall, Tool: "Edit", CallID: "t1", Input: raw(`{"file_path":"/e"}`), Usage: &Usage{InputTokens: 1, OutputTokens: 9}},
				{Kind: KindToolCall, Tool: "NotebookEdit", CallID: "t2", Input: raw(`{"notebook_path":"/n.ipynb"}`)},
				{Kind: KindToolResult, Tool: "Edit", CallID: "t1", Output: "ok"},
				{Kind: KindFileChange, Tool: "Edit", CallID: "t1", Path: "/e"},
				{Kind: KindToolResult, Tool: "NotebookEdit", CallID: "t2", Output: "ok"},
				{Kind: KindFileChange, Tool: "NotebookEdit", CallID: "t2", Path: "/n.ipynb"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseClaude(strings.NewReader(strings.Join(tt.lines, "\n")))
			if err != nil {
				t.Fatal(err)
			}
			checkEntries(t, got, tt.want)
		})
	}
}

// TestParseMalformed checks that every parser names the line it cannot
// read, and skips line types it does not know.
func TestParseMalformed(t *testing.T) {
	unknown := map[string]string{
		"claude": `{"type":"a-type-from-the-future","timestamp":17}`,
		"codex":  `{"timestamp":"2026-01-01T00:00:00Z","type":"a-type-from-the-future","payload":[1]}`,
		"gemini": `{"sessionId":"s","projectHash":"h","startTime":"2026-01-01T00:00:00Z"}`,
	}
	for agent, parse := range parsers {
		t.Run(agent, func(t *testing.T) {
			entries, err := parse(bytes.NewReader([]byte(unknown[agent] + "\n\n" + unknown[agent] + "\n")))
			if err != nil || len(entries) != 0 {
				t.Errorf("unknown lines: %v entries, error %v; want none and no error", entries, err)
			}
			_, err = parse(bytes.NewReader([]byte(unknown[agent] + "\n\n{\"type\": \"user\", oops\n")))
			if err == nil || !strings.Contains(err.Error(), "line 3") {
				t.Errorf("malformed line 3: error %v, want one naming line 3", err)
			}
			_, err = parse(bytes.NewReader([]byte(unknown[agent] + "\n\n{\"type\": \"user\", oops\n" + unknown[agent])))
			if err == nil || !strings.Contains(err.Error(), "line 3") {
				t.Errorf("malformed line 3 before a last line: error %v, want one naming line 3", err)
			}
		})
	}
}

// TestParseWhileWritten reads transcripts as their agent is writing them: a
// last line cut short, with no newline yet, is left for the next read.
func TestParseWhileWritten(t *testing.T) {
	for agent, name := range map[string]string{"claude": "testdata/claude.jsonl", "codex": "testdata/codex.jsonl"} {
		t.Run(agent, func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			whole := bytes.TrimRight(data, "\n")
			last := bytes.LastIndexByte(whole, '\n') + 1
			complete, err := parsers[agent](bytes.NewReader(whole[:last]))
			if err != nil || len(complete) == 0 {
				t.Fatalf("all but the last line: %d entries, %v", len(complete), err)
			}
			cut, err := parsers[agent](bytes.NewReader(whole[:last+(len(whole)-last)/2]))
			if err != nil {
				t.Fatalf("a last line cut short: %v", err)
			}
			checkEntries(t, cut, complete)
		})
	}
}
