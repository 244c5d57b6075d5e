package transcript

import (
	"strings"
	"testing"
)

// TestParseCodexRecorded reads a rollout the real Codex 0.169.0 wrote (see
// TestRecord): an exec_command call, an apply_patch call, and a plain turn,
// over three runs of one resumed thread.
func TestParseCodexRecorded(t *testing.T) {
	entries := parseFile(t, "codex", "testdata/codex.jsonl")
	notes := recordDir + "/notes.txt"
	execOut := "Chunk ID: fa0fed\nWall time: 0.0001 seconds\nProcess exited with code 0\nOriginal token count: 4\nOutput:\nhello-from-tool\n"
	patchOut := "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA " + notes + "\n"
	checkEntries(t, entries, []Entry{
		{Kind: KindUser, Text: "RUN: echo hello-from-tool | tee marker.txt"},
		{Kind: KindAssistant, Text: "Running the command.", Usage: &Usage{InputTokens: 9463, OutputTokens: 87, CacheReadTokens: 64}},
		{Kind: KindToolCall, Tool: "exec_command", CallID: "call_modeltest_1", Input: raw(`{"cmd":"echo hello-from-tool | tee marker.txt"}`)},
		{Kind: KindToolResult, Tool: "exec_command", CallID: "call_modeltest_1", Output: execOut},
		{Kind: KindAssistant, Text: "DONE: " + execOut, Usage: &Usage{InputTokens: 9611, OutputTokens: 69, CacheReadTokens: 64}},
		{Kind: KindUser, Text: "WRITE: " + notes},
		{Kind: KindAssistant, Text: "Writing the file.", Usage: &Usage{InputTokens: 9724, OutputTokens: 101, CacheReadTokens: 64}},
		{Kind: KindToolCall, Tool: "apply_patch", CallID: "call_modeltest_3", Input: raw(`"*** Begin Patch\n*** Add File: ` + notes + `\n+written by modeltest\n*** End Patch\n"`)},
		{Kind: KindToolResult, Tool: "apply_patch", CallID: "call_modeltest_3", Output: patchOut},
		{Kind: KindFileChange, Tool: "apply_patch", CallID: "call_modeltest_3", Path: notes},
		{Kind: KindAssistant, Text: "DONE: " + patchOut, Usage: &Usage{InputTokens: 9888, OutputTokens: 69, CacheReadTokens: 64}},
		{Kind: KindUser, Text: "thanks"},
		{Kind: KindAssistant, Text: "ECHO: thanks", Usage: &Usage{InputTokens: 9990, OutputTokens: 39, CacheReadTokens: 64}},
	})
	// Usage is in both token_usage_record and token_count lines; the total
	// must count each response once.
	s := Summarize(entries)
	if s.Usage.OutputTokens != 87+69+101+69+39 || s.Usage.CacheReadTokens != 5*64 || s.Messages != 8 {
		t.Errorf("summary %+v", s)
	}
}

// TestParseCodexLines covers what the recording does not show.
func TestParseCodexLines(t *testing.T) {
	const meta = `{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x","cwd":"/w"}}`
	tests := []struct {
		name  string
		lines []string
		want  []Entry
	}{
		{
			name: "a failed patch changes no file",
			lines: []string{meta,
				`{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c1","input":"*** Begin Patch\n*** Update File: a.go\n@@\n-x\n+y\n*** End Patch"}}`,
				`{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c1","output":"Exit code: 1\nOutput:\napply_patch verification failed"}}`,
			},
			want: []Entry{
				{Kind: KindToolCall, Tool: "apply_patch", CallID: "c1", Input: raw(`"*** Begin Patch\n*** Update File: a.go\n@@\n-x\n+y\n*** End Patch"`)},
				{Kind: KindToolResult, Tool: "apply_patch", CallID: "c1", Output: "Exit code: 1\nOutput:\napply_patch verification failed"},
			},
		},
		{
			name: "a turn that failed (Codex 0.169.0, its model answering 401)",
			lines: []string{meta,
				`{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello two"}]}}`,
				`{"timestamp":"2026-01-01T00:00:07Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t2","last_agent_message":null,"error":{"message":"unexpected status 401 Unauthorized: Your authentication token has been invalidated.","codex_error_info":{"http_connection_failed":{"http_status_code":401}}}}}`,
			},
			want: []Entry{
				{Kind: KindUser, Text: "hello two"},
				{Kind: KindError, Text: "unexpected status 401 Unauthorized: Your authentication token has been invalidated."},
			},
		},
		{
			name: "a patch run through the shell, older output and token_count usage",
			lines: []string{meta,
				`{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/w</cwd>\n</environment_context>"}]}}`,
				`{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"move it"}]}}`,
				`{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"reasoning","summary":[]}}`,
				`{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"function_call","name":"shell","call_id":"c1","arguments":"{\"command\":[\"apply_patch\",\"*** Begin Patch\\n*** Update File: old.go\\n*** Move to: /abs/new.go\\n*** Delete File: gone.go\\n*** End Patch\"]}"}}`,
				`{"timestamp":"2026-01-01T00:00:03Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7}}}}`,
				`{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"Done!\",\"metadata\":{\"exit_code\":0}}"}}`,
				`{"timestamp":"2026-01-01T00:00:04Z","type":"event_msg","payload":{"type":"token_count","info":null}}`,
			},
			want: []Entry{
				{Kind: KindUser, Text: "move it"},
				{Kind: KindToolCall, Tool: "shell", CallID: "c1", Input: raw(`{"command":["apply_patch","*** Begin Patch\n*** Update File: old.go\n*** Move to: /abs/new.go\n*** Delete File: gone.go\n*** End Patch"]}`),
					Usage: &Usage{InputTokens: 60, OutputTokens: 7, CacheReadTokens: 40}},
				{Kind: KindToolResult, Tool: "shell", CallID: "c1", Output: "Done!"},
				{Kind: KindFileChange, Tool: "shell", CallID: "c1", Path: "/w/old.go"},
				{Kind: KindFileChange, Tool: "shell", CallID: "c1", Path: "/abs/new.go"},
				{Kind: KindFileChange, Tool: "shell", CallID: "c1", Path: "/w/gone.go"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCodex(strings.NewReader(strings.Join(tt.lines, "\n")))
			if err != nil {
				t.Fatal(err)
			}
			checkEntries(t, got, tt.want)
		})
	}
}
