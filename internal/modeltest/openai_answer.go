package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// answer replies to a Responses request by the script.
func (s *OpenAIResponses) answer(w http.ResponseWriter, rec Request, req openaiRequest) {
	n := s.next.Add(1)
	items := openaiScript(rec, req, n, &s.rules)
	out := ""
	for _, it := range items {
		raw, _ := json.Marshal(it)
		out += string(raw)
	}
	// As OpenAI counts them, the cached tokens are part of the input tokens.
	in := tokens(string(rec.Body)) + OpenAICached
	usage := map[string]any{
		"input_tokens":          in,
		"input_tokens_details":  map[string]int64{"cached_tokens": OpenAICached},
		"output_tokens":         tokens(out),
		"output_tokens_details": map[string]int64{"reasoning_tokens": 0},
		"total_tokens":          in + tokens(out),
	}
	resp := map[string]any{
		"id":         fmt.Sprintf("resp_modeltest_%d", n),
		"object":     "response",
		"created_at": 0,
		"status":     "completed",
		"model":      rec.Model,
		"output":     items,
		"usage":      usage,
	}
	if !rec.Stream {
		writeJSON(w, resp)
		return
	}
	streamOpenAI(w, resp, items)
}

// openaiScript picks the output items: an assistant message, and a tool call when
// the script wants one and the request offers the tool.
func openaiScript(rec Request, req openaiRequest, n int64, rules *rules) []map[string]any {
	message := func(text string) map[string]any {
		return map[string]any{"id": fmt.Sprintf("msg_modeltest_%d", n), "type": "message", "status": "completed",
			"role": "assistant", "content": []map[string]any{{"type": "output_text", "text": text, "annotations": []any{}}}}
	}
	if len(rec.Tools) == 0 {
		return []map[string]any{message(SideReply)}
	}
	last := lastTurn(rec.Messages)
	t := rules.decide(last)
	toolType := map[string]string{}
	for _, tool := range req.Tools {
		toolType[tool.Name] = tool.Type
	}
	callID := fmt.Sprintf("call_modeltest_%d", n)
	function := func(name string, args map[string]any) map[string]any {
		raw, _ := json.Marshal(args)
		return map[string]any{"id": fmt.Sprintf("fc_modeltest_%d", n), "type": "function_call", "status": "completed",
			"name": name, "call_id": callID, "arguments": string(raw)}
	}
	if call, step, ok, err := nextPlanned(rec.Messages); err != nil {
		return []map[string]any{message(err.Error())}
	} else if ok && toolType[call.tool] == "function" {
		return []map[string]any{message(fmt.Sprintf("Step %d: %s.", step, call.tool)), function(call.tool, call.input)}
	}
	switch {
	case t.call == callRun && toolType["exec_command"] == "function":
		return []map[string]any{message(t.text), function("exec_command", map[string]any{"cmd": t.arg})}
	case t.call == callRun && toolType["run_shell_command"] == "function": // Qwen Code
		return []map[string]any{message(t.text), function("run_shell_command", map[string]any{"command": t.arg})}
	case t.call == callRun && toolType["bash"] == "function": // OpenCode
		return []map[string]any{message(t.text), function("bash", map[string]any{"command": t.arg, "description": "Run the command"})}
	case t.call == callRun && toolType["shell"] == "function":
		return []map[string]any{message(t.text), function("shell", map[string]any{"command": []string{"bash", "-lc", t.arg}})}
	case t.call == callWrite && toolType["apply_patch"] == "custom":
		return []map[string]any{message(t.text), {"id": fmt.Sprintf("ctc_modeltest_%d", n), "type": "custom_tool_call",
			"status": "completed", "name": "apply_patch", "call_id": callID, "input": addFilePatch(t.arg)}}
	case t.call == callWrite && toolType["apply_patch"] == "function":
		// Codex names the patch "input", OpenCode "patchText".
		patch := addFilePatch(t.arg)
		return []map[string]any{message(t.text), function("apply_patch", map[string]any{"input": patch, "patchText": patch})}
	case t.call != callNone:
		return []map[string]any{message(echo(last).text)}
	}
	return []map[string]any{message(t.text)}
}

// addFilePatch is an apply_patch patch creating path with WriteContent.
func addFilePatch(path string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: " + path + "\n")
	for line := range strings.Lines(WriteContent) {
		b.WriteString("+" + strings.TrimSuffix(line, "\n") + "\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// streamOpenAI writes resp as the Responses API event stream.
func streamOpenAI(w http.ResponseWriter, resp map[string]any, items []map[string]any) {
	sse := newSSE(w)
	seq := 0
	event := func(name string, v map[string]any) {
		v["type"] = name
		v["sequence_number"] = seq
		seq++
		sse.event(name, v)
	}
	start := make(map[string]any, len(resp))
	for k, v := range resp {
		start[k] = v
	}
	start["status"], start["output"] = "in_progress", []any{}
	delete(start, "usage")
	event("response.created", map[string]any{"response": start})
	event("response.in_progress", map[string]any{"response": start})
	for i, it := range items {
		id := it["id"]
		switch it["type"] {
		case "message":
			text := it["content"].([]map[string]any)[0]["text"].(string)
			event("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{
				"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			event("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": part})
			for _, c := range chunks(text, 16) {
				event("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": c})
			}
			event("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text})
			done := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
			event("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": done})
		case "function_call":
			added := map[string]any{}
			for k, v := range it {
				added[k] = v
			}
			added["status"], added["arguments"] = "in_progress", ""
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			args := it["arguments"].(string)
			for _, c := range chunks(args, 24) {
				event("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": c})
			}
			event("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
		default:
			event("response.output_item.added", map[string]any{"output_index": i, "item": it})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	event("response.completed", map[string]any{"response": resp})
}

// openaiError writes an error in the OpenAI API's error shape.
func openaiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
}
