package modeltest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// codexTools are tools as Codex 0.169 offers them.
var codexTools = []map[string]any{
	{"type": "function", "name": "exec_command"},
	{"type": "custom", "name": "apply_patch"},
	{"type": "web_search"},
}

// userItem is a Responses API user message.
func userItem(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []map[string]any{{"type": "input_text", "text": text}}}
}

// completed rebuilds a streamed Responses answer: the output items as
// response.output_item.done delivered them, and the completed response.
func completed(t *testing.T, events []sseEvent) ([]map[string]any, map[string]any) {
	t.Helper()
	if events[0].name != "response.created" || events[len(events)-1].name != "response.completed" {
		t.Fatalf("stream does not run response.created ... response.completed: %s", names(events))
	}
	var items []map[string]any
	added := 0
	for i, e := range events {
		if e.data["sequence_number"] != float64(i) {
			t.Errorf("event %d has sequence_number %v", i, e.data["sequence_number"])
		}
		switch e.name {
		case "response.output_item.added":
			added++
		case "response.output_item.done":
			items = append(items, e.data["item"].(map[string]any))
		}
	}
	if added != len(items) {
		t.Errorf("%d items added, %d done", added, len(items))
	}
	return items, events[len(events)-1].data["response"].(map[string]any)
}

func TestOpenAIScript(t *testing.T) {
	tests := []struct {
		name     string
		input    any
		tools    []map[string]any
		wantText string
		wantCall map[string]any // type, name and arguments or input of the call
	}{
		{
			name:     "RUN calls exec_command",
			input:    []any{userItem("<environment_context>x</environment_context>"), userItem("RUN: echo hi > m.txt")},
			tools:    codexTools,
			wantText: "Running the command.",
			wantCall: map[string]any{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"echo hi \u003e m.txt"}`},
		},
		{
			name:     "RUN with the older shell tool",
			input:    "RUN: ls",
			tools:    []map[string]any{{"type": "function", "name": "shell"}},
			wantText: "Running the command.",
			wantCall: map[string]any{"type": "function_call", "name": "shell", "arguments": `{"command":["bash","-lc","ls"]}`},
		},
		{
			name:     "WRITE calls the custom apply_patch",
			input:    []any{userItem("WRITE: w.txt")},
			tools:    codexTools,
			wantText: "Writing the file.",
			wantCall: map[string]any{"type": "custom_tool_call", "name": "apply_patch",
				"input": "*** Begin Patch\n*** Add File: w.txt\n+written by modeltest\n*** End Patch\n"},
		},
		{
			name: "function output answers DONE",
			input: []any{userItem("RUN: echo hi"),
				map[string]any{"type": "function_call", "name": "exec_command", "call_id": "c1", "arguments": "{}"},
				map[string]any{"type": "function_call_output", "call_id": "c1", "output": "hi\n"}},
			tools:    codexTools,
			wantText: "DONE: hi\n",
		},
		{
			name: "custom tool output with parts answers DONE",
			input: []any{userItem("WRITE: w.txt"),
				map[string]any{"type": "custom_tool_call", "name": "apply_patch", "call_id": "c1", "input": "..."},
				map[string]any{"type": "custom_tool_call_output", "call_id": "c1", "output": []map[string]any{{"type": "input_text", "text": "Success"}}}},
			tools:    codexTools,
			wantText: "DONE: Success",
		},
		{
			name:     "plain text is echoed",
			input:    []any{map[string]any{"type": "message", "role": "developer", "content": "be nice"}, userItem("next")},
			tools:    codexTools,
			wantText: "ECHO: next",
		},
		{
			name:     "side call without tools",
			input:    "RUN: ls",
			wantText: SideReply,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewOpenAIResponses(t)
			body := map[string]any{"model": "gpt-test", "stream": true, "input": tt.input, "instructions": "base"}
			if tt.tools != nil {
				body["tools"] = tt.tools
			}
			resp := post(t, s.URL()+"/v1/responses", map[string]string{"Authorization": "Bearer k2"}, body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			items, done := completed(t, readSSE(t, resp.Body))
			text := items[0]["content"].([]any)[0].(map[string]any)["text"]
			if items[0]["type"] != "message" || text != tt.wantText {
				t.Errorf("first item %v, want a message %q", items[0], tt.wantText)
			}
			if tt.wantCall == nil && len(items) != 1 {
				t.Errorf("unexpected items %v", items[1:])
			}
			if tt.wantCall != nil {
				if len(items) != 2 {
					t.Fatalf("got %d items, want a message and a call", len(items))
				}
				for k, v := range tt.wantCall {
					if items[1][k] != v {
						t.Errorf("call %s = %v, want %v", k, items[1][k], v)
					}
				}
				if items[1]["call_id"] == "" {
					t.Errorf("call has no call_id: %v", items[1])
				}
			}
			usage := done["usage"].(map[string]any)
			if usage["input_tokens"].(float64) <= 0 || usage["input_tokens_details"].(map[string]any)["cached_tokens"] != float64(OpenAICached) {
				t.Errorf("usage %v", usage)
			}
			if s.Key() != "k2" {
				t.Errorf("Key() = %q", s.Key())
			}
		})
	}
}

func TestOpenAIRecordsAndPlainJSON(t *testing.T) {
	s := NewOpenAIResponses(t)
	resp := post(t, s.URL()+"/v1/responses", nil, map[string]any{"model": "m", "tools": codexTools, "instructions": "base",
		"input": []any{
			map[string]any{"type": "message", "role": "developer", "content": []map[string]any{{"type": "input_text", "text": "dev"}}},
			userItem("RUN: date"),
			map[string]any{"type": "message", "role": "assistant", "content": []map[string]any{{"type": "output_text", "text": "ok"}}},
			map[string]any{"type": "function_call", "name": "exec_command", "call_id": "c1", "arguments": "{}"},
			map[string]any{"type": "function_call_output", "call_id": "c1", "output": "Mon"},
			map[string]any{"type": "reasoning", "summary": []any{}},
		}})
	var out struct {
		Status string
		Output []map[string]any
		Usage  map[string]any
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Status != "completed" || len(out.Output) != 1 || out.Usage == nil {
		t.Errorf("plain answer %+v", out)
	}
	if resp := post(t, s.URL()+"/v1/models", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: status %d", resp.StatusCode)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[1].Path != "/v1/models" {
		t.Fatalf("recorded %+v", reqs)
	}
	r := reqs[0]
	want := []Message{
		{Role: "user", Text: "RUN: date"},
		{Role: "assistant", Text: "ok", ToolUses: []string{"exec_command"}},
		{Role: "user", ToolResults: []string{"Mon"}},
	}
	got, _ := json.Marshal(r.Messages)
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Errorf("messages\n got %s\nwant %s", got, wantJSON)
	}
	if r.System != "base\ndev" || !r.HasTool("web_search") || !r.Contains("Mon") || r.Stream {
		t.Errorf("recorded %+v", r)
	}
	if !strings.Contains(string(r.Body), `"reasoning"`) {
		t.Error("raw body not kept")
	}
}
