package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// anthropicBlockOut is a content block of an answer.
type anthropicBlockOut struct {
	Type  string         `json:"type"`
	Text  *string        `json:"text,omitempty"`
	ID    string         `json:"id,omitempty"`
	Name  string         `json:"name,omitempty"`
	Input map[string]any `json:"input,omitempty"`
}

// answer replies to a Messages request by the script.
func (s *Anthropic) answer(w http.ResponseWriter, rec Request, req anthropicRequest, inTokens int64) {
	text, tool, input := anthropicScript(rec, req, &s.rules)
	n := s.next.Add(1)
	blocks := []anthropicBlockOut{{Type: "text", Text: &text}}
	stop := "end_turn"
	if tool != "" {
		stop = "tool_use"
		blocks = append(blocks, anthropicBlockOut{Type: "tool_use", ID: fmt.Sprintf("toolu_modeltest_%d", n), Name: tool, Input: input})
	}
	outTokens := tokens(text)
	if input != nil {
		raw, _ := json.Marshal(input)
		outTokens += tokens(string(raw))
	}
	usage := map[string]int64{
		"input_tokens":                inTokens,
		"output_tokens":               outTokens,
		"cache_read_input_tokens":     AnthropicCacheRead,
		"cache_creation_input_tokens": AnthropicCacheWrite,
	}
	msg := map[string]any{
		"id":            fmt.Sprintf("msg_modeltest_%d", n),
		"type":          "message",
		"role":          "assistant",
		"model":         rec.Model,
		"content":       blocks,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage":         usage,
	}
	if !rec.Stream {
		writeJSON(w, msg)
		return
	}
	streamAnthropic(w, msg, blocks, stop, usage)
}

// anthropicScript picks the answer: text, and the tool to call with its input.
func anthropicScript(rec Request, req anthropicRequest, rules *rules) (text, tool string, input map[string]any) {
	if len(rec.Tools) == 0 {
		return sideReply(req), "", nil
	}
	if call, step, ok, err := nextPlanned(rec.Messages); err != nil {
		return err.Error(), "", nil
	} else if ok {
		return fmt.Sprintf("Step %d: %s.", step, call.tool), call.tool, call.input
	}
	last := lastTurn(rec.Messages)
	t := rules.decide(last)
	switch {
	case t.call == callRun && rec.HasTool("Bash"):
		return t.text, "Bash", map[string]any{"command": t.arg, "description": "run it"}
	case t.call == callWrite && rec.HasTool("Write"):
		return t.text, "Write", map[string]any{"file_path": t.arg, "content": WriteContent}
	case t.call != callNone:
		return echo(last).text, "", nil
	}
	return t.text, "", nil
}

// sideReply answers a side call: SideReply, or when the request asks for
// JSON by a schema, an object giving SideReply to every required string
// property (Claude Code's title call asks for {"title": string}).
func sideReply(req anthropicRequest) string {
	f := req.OutputConfig.Format
	if f == nil || f.Type != "json_schema" {
		return SideReply
	}
	obj := map[string]string{}
	for _, name := range f.Schema.Required {
		if f.Schema.Properties[name].Type == "string" {
			obj[name] = SideReply
		}
	}
	raw, _ := json.Marshal(obj)
	return string(raw)
}

// streamAnthropic writes msg as the Messages API event stream.
func streamAnthropic(w http.ResponseWriter, msg map[string]any, blocks []anthropicBlockOut, stop string, usage map[string]int64) {
	sse := newSSE(w)
	start := make(map[string]any, len(msg))
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = []any{}
	start["stop_reason"] = nil
	start["usage"] = map[string]int64{
		"input_tokens":                usage["input_tokens"],
		"output_tokens":               1,
		"cache_read_input_tokens":     usage["cache_read_input_tokens"],
		"cache_creation_input_tokens": usage["cache_creation_input_tokens"],
	}
	sse.event("message_start", map[string]any{"type": "message_start", "message": start})
	sse.event("ping", map[string]any{"type": "ping"})
	for i, b := range blocks {
		switch b.Type {
		case "text":
			empty := ""
			sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": anthropicBlockOut{Type: "text", Text: &empty}})
			for _, c := range chunks(*b.Text, 16) {
				sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]string{"type": "text_delta", "text": c}})
			}
		case "tool_use":
			sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			raw, _ := json.Marshal(b.Input)
			for _, c := range chunks(string(raw), 24) {
				sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]string{"type": "input_json_delta", "partial_json": c}})
			}
		}
		sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": usage})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}
