package modeltest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// anthropicTools are tools as Claude Code offers them (names only matter).
var anthropicTools = []map[string]any{{"name": "Bash"}, {"name": "Write"}}

// assembled is an answer rebuilt from its event stream as a client would.
type assembled struct {
	text      string
	toolName  string
	toolInput map[string]any
	stop      string
	usage     map[string]any
}

// assemble rebuilds a streamed Messages answer, checking the event order.
func assemble(t *testing.T, events []sseEvent) assembled {
	t.Helper()
	var a assembled
	var partial string
	if events[0].name != "message_start" || events[len(events)-1].name != "message_stop" {
		t.Fatalf("stream does not run message_start ... message_stop: %s", names(events))
	}
	for _, e := range events {
		switch e.name {
		case "message_start":
			msg := e.data["message"].(map[string]any)
			if _, ok := msg["usage"].(map[string]any)["input_tokens"]; !ok {
				t.Errorf("message_start has no input_tokens usage: %v", msg)
			}
		case "content_block_start":
			if b := e.data["content_block"].(map[string]any); b["type"] == "tool_use" {
				a.toolName = b["name"].(string)
			}
		case "content_block_delta":
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				a.text += d["text"].(string)
			case "input_json_delta":
				partial += d["partial_json"].(string)
			default:
				t.Errorf("unknown delta %v", d)
			}
		case "message_delta":
			a.stop = e.data["delta"].(map[string]any)["stop_reason"].(string)
			a.usage = e.data["usage"].(map[string]any)
		}
	}
	if partial != "" {
		if err := json.Unmarshal([]byte(partial), &a.toolInput); err != nil {
			t.Fatalf("tool input deltas do not add up to JSON %q: %v", partial, err)
		}
	}
	return a
}

func TestAnthropicScript(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name      string
		messages  []map[string]any
		tools     []map[string]any
		extra     map[string]any // more request fields
		wantText  string
		wantTool  string
		wantInput map[string]any
		wantStop  string
	}{
		{
			name:      "RUN calls Bash",
			messages:  []map[string]any{{"role": "user", "content": "please\nRUN: echo hi > f.txt\nthanks"}},
			tools:     anthropicTools,
			wantText:  "Running the command.",
			wantTool:  "Bash",
			wantInput: map[string]any{"command": "echo hi > f.txt", "description": "run it"},
			wantStop:  "tool_use",
		},
		{
			name: "RUN after Claude Code's trailing system message",
			messages: []map[string]any{
				{"role": "user", "content": []map[string]any{
					{"type": "text", "text": "<system-reminder>\nRUN: not this\n</system-reminder>\n"},
					{"type": "text", "text": "RUN: ls"}}},
				{"role": "system", "content": "# Environment"},
			},
			tools:     anthropicTools,
			wantText:  "Running the command.",
			wantTool:  "Bash",
			wantInput: map[string]any{"command": "ls", "description": "run it"},
			wantStop:  "tool_use",
		},
		{
			name:      "WRITE calls Write",
			messages:  []map[string]any{{"role": "user", "content": "WRITE: /tmp/x/out.txt"}},
			tools:     anthropicTools,
			wantText:  "Writing the file.",
			wantTool:  "Write",
			wantInput: map[string]any{"file_path": "/tmp/x/out.txt", "content": WriteContent},
			wantStop:  "tool_use",
		},
		{
			name: "tool result answers DONE",
			messages: []map[string]any{
				{"role": "user", "content": "RUN: echo hi"},
				{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{}}}},
				{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "t1",
					"content": []map[string]any{{"type": "text", "text": "hi\nRUN: again"}}}}},
			},
			tools:    anthropicTools,
			wantText: "DONE: hi\nRUN: again",
			wantStop: "end_turn",
		},
		{
			name:     "tool result is cut at 200 characters",
			messages: []map[string]any{{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "t1", "content": long}}}},
			tools:    anthropicTools,
			wantText: "DONE: " + long[:200],
			wantStop: "end_turn",
		},
		{
			name:     "plain text is echoed without reminders",
			messages: []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": "<system-reminder>x</system-reminder>"}, {"type": "text", "text": "hello"}}}},
			tools:    anthropicTools,
			wantText: "ECHO: hello",
			wantStop: "end_turn",
		},
		{
			name:     "RUN without a Bash tool is echoed",
			messages: []map[string]any{{"role": "user", "content": "RUN: ls"}},
			tools:    []map[string]any{{"name": "Read"}},
			wantText: "ECHO: RUN: ls",
			wantStop: "end_turn",
		},
		{
			name:     "title side call asking for JSON gets JSON",
			messages: []map[string]any{{"role": "user", "content": "<session>\nRUN: ls\n</session>\n\nWrite the title"}},
			tools:    []map[string]any{},
			extra: map[string]any{"output_config": map[string]any{"format": map[string]any{"type": "json_schema", "schema": map[string]any{
				"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}, "required": []string{"title"}}}}},
			wantText: `{"title":"` + SideReply + `"}`,
			wantStop: "end_turn",
		},
		{
			name:     "side call without tools gets a title",
			messages: []map[string]any{{"role": "user", "content": "RUN: ls"}},
			wantText: SideReply,
			wantStop: "end_turn",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewAnthropic(t)
			body := map[string]any{"model": "claude-test", "stream": true, "messages": tt.messages, "max_tokens": 100}
			if tt.tools != nil {
				body["tools"] = tt.tools
			}
			for k, v := range tt.extra {
				body[k] = v
			}
			resp := post(t, s.URL()+"/v1/messages?beta=true", map[string]string{"x-api-key": "k1"}, body)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			a := assemble(t, readSSE(t, resp.Body))
			if a.text != tt.wantText || a.toolName != tt.wantTool || a.stop != tt.wantStop {
				t.Errorf("got text %q tool %q stop %q, want %q %q %q", a.text, a.toolName, a.stop, tt.wantText, tt.wantTool, tt.wantStop)
			}
			if tt.wantInput != nil {
				got, _ := json.Marshal(a.toolInput)
				want, _ := json.Marshal(tt.wantInput)
				if string(got) != string(want) {
					t.Errorf("tool input %s, want %s", got, want)
				}
			}
			if a.usage["output_tokens"] == nil || a.usage["cache_read_input_tokens"] != float64(AnthropicCacheRead) {
				t.Errorf("message_delta usage %v", a.usage)
			}
			if s.Key() != "k1" {
				t.Errorf("Key() = %q, want k1", s.Key())
			}
		})
	}
}

func TestAnthropicPlainJSONAndCountTokens(t *testing.T) {
	s := NewAnthropic(t)
	resp := post(t, s.URL()+"/v1/messages", nil, map[string]any{"model": "m", "tools": anthropicTools,
		"system":   []map[string]any{{"type": "text", "text": "sys A"}, {"type": "text", "text": "sys B"}},
		"messages": []map[string]any{{"role": "user", "content": "RUN: date"}}})
	var msg struct {
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, Text, Name string
			Input            map[string]any
		}
		Usage map[string]int64
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != "tool_use" || len(msg.Content) != 2 || msg.Content[1].Name != "Bash" || msg.Content[1].Input["command"] != "date" {
		t.Errorf("plain answer %+v", msg)
	}
	if msg.Usage["input_tokens"] <= 0 || msg.Usage["cache_creation_input_tokens"] != AnthropicCacheWrite {
		t.Errorf("usage %v", msg.Usage)
	}

	resp = post(t, s.URL()+"/v1/messages/count_tokens", nil, map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "hi"}}})
	var count map[string]int64
	if err := json.NewDecoder(resp.Body).Decode(&count); err != nil || count["input_tokens"] <= 0 {
		t.Errorf("count_tokens answer %v, %v", count, err)
	}

	resp = post(t, s.URL()+"/v1/other", nil, map[string]any{})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: status %d", resp.StatusCode)
	}
	resp = post(t, s.URL()+"/v1/messages", nil, "not an object")
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "invalid_request_error") {
		t.Errorf("bad body: status %d %s", resp.StatusCode, b)
	}

	reqs := s.Requests()
	if len(reqs) != 4 {
		t.Fatalf("recorded %d requests, want 4", len(reqs))
	}
	first := reqs[0]
	if first.System != "sys A\nsys B" || first.Stream || !first.HasTool("Write") || !first.Contains("RUN: date") || first.Contains("nowhere") {
		t.Errorf("first request recorded as %+v", first)
	}
	if reqs[1].Path != "/v1/messages/count_tokens" || reqs[2].Path != "/v1/other" {
		t.Errorf("paths %q %q", reqs[1].Path, reqs[2].Path)
	}
}
