package modeltest

import (
	"net/http"
	"testing"
)

// TestRunOn: a message holding a RunOn marker makes the agent run the rule's command,
// on both servers; a tool result holding it, and a message without it, do not; a
// ReplyOn marker gets the rule's text.
func TestRunOn(t *testing.T) {
	const marker, command = "conflicts with", "git rebase --continue"
	a := NewAnthropic(t)
	a.RunOn(marker, command)
	ask := func(messages []map[string]any) assembled {
		resp := post(t, a.URL()+"/v1/messages", map[string]string{"x-api-key": "k"},
			map[string]any{"model": "claude-test", "stream": true, "max_tokens": 10, "tools": anthropicTools, "messages": messages})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return assemble(t, readSSE(t, resp.Body))
	}
	if got := ask([]map[string]any{{"role": "user", "content": "your work conflicts with main's greeting.txt"}}); got.toolName != "Bash" || got.toolInput["command"] != command {
		t.Errorf("the marked message got tool %q input %v, want Bash running %q", got.toolName, got.toolInput, command)
	}
	if got := ask([]map[string]any{{"role": "user", "content": "nothing to see"}}); got.toolName != "" || got.text != "ECHO: nothing to see" {
		t.Errorf("an unmarked message got %q (tool %q)", got.text, got.toolName)
	}
	a.ReplyOn("how good is it", "SCORE: 7/10 — fine")
	if got := ask([]map[string]any{{"role": "user", "content": "how good is it?"}}); got.toolName != "" || got.text != "SCORE: 7/10 — fine" {
		t.Errorf("a message holding a ReplyOn marker got %q (tool %q)", got.text, got.toolName)
	}
	result := []map[string]any{{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "t1", "content": "it conflicts with x"}}}}
	if got := ask(result); got.toolName != "" || got.text != "DONE: it conflicts with x" {
		t.Errorf("a tool result holding the marker got %q (tool %q)", got.text, got.toolName)
	}

	o := NewOpenAIResponses(t)
	o.RunOn(marker, command)
	resp := post(t, o.URL()+"/v1/responses", map[string]string{"Authorization": "Bearer k"},
		map[string]any{"model": "gpt-test", "stream": true, "tools": codexTools, "input": []any{userItem("this conflicts with that")}})
	items, _ := completed(t, readSSE(t, resp.Body))
	if len(items) != 2 || items[1]["name"] != "exec_command" || items[1]["arguments"] != `{"cmd":"git rebase --continue"}` {
		t.Errorf("the marked message got %v, want exec_command running %q", items, command)
	}
}
