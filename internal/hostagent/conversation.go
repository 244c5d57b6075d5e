// Package hostagent is paddock's own coding agent: a model loop that runs on the host
// (in the daemon), whose tools act inside a sandbox through the guest's Exec and Files
// services. The model's key never leaves the host, every tool call is seen and recorded
// there, and the sandbox needs no agent CLI, no node, not even a shell beyond /bin/sh.
//
// The loop is provider-neutral: a Model turns a conversation into the next assistant
// message; Anthropic is the one paddock ships. The conversation is plain data (Message),
// kept by the caller after every step so that a run resumes where it stopped.
package hostagent

import (
	"encoding/json"
	"fmt"
)

// Block types.
const (
	BlockText       = "text"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
)

// Block is one piece of a message: text, a tool call (tool_use) or a tool's result
// (tool_result).
type Block struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// ID is a tool call's id; a result's ToolUseID names the call it answers.
	ID        string          `json:"id,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// Message is one turn of the conversation: role "user" (prompts and tool results) or
// "assistant".
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// ToolUses returns the tool calls of a message.
func (m Message) ToolUses() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// Text returns the text blocks of a message, joined.
func (m Message) Text() string {
	s := ""
	for _, b := range m.Content {
		if b.Type == BlockText {
			s += b.Text
		}
	}
	return s
}

// Repair makes a conversation cut short valid to send again: a model call must answer
// every tool call of the last assistant message, so calls left without results (the
// daemon died while they ran) get one saying so. It returns conv, changed or not.
func Repair(conv []Message) []Message {
	if len(conv) == 0 || conv[len(conv)-1].Role != "assistant" {
		return conv
	}
	var results []Block
	for _, u := range conv[len(conv)-1].ToolUses() {
		results = append(results, Block{Type: BlockToolResult, ToolUseID: u.ID, IsError: true,
			Text: fmt.Sprintf("%s did not finish: the run was interrupted (the paddock daemon stopped) while it ran", u.Name)})
	}
	if results == nil {
		return conv
	}
	return append(conv, Message{Role: "user", Content: results})
}

// elidedNote replaces the middle of a tool result compacted out of the model's context.
const elidedNote = "\n[... %d bytes of this old tool output left out to keep the conversation within the model's context; `paddock run show` has all of it ...]\n"

// compact returns the conversation as the model is sent it when it would pass budget
// tokens: the results of older tool calls (all but the keep newest, then all but the
// newest) are cut to their head and tail, oldest first, until the estimate fits. conv itself is not changed: the run
// keeps every result whole.
func compact(conv []Message, budget int64, keep int) []Message {
	if budget <= 0 || estimate(conv) <= budget {
		return conv
	}
	out := make([]Message, len(conv))
	copy(out, conv)
	var results [][2]int // message, block
	for i, m := range out {
		for j, b := range m.Content {
			if b.Type == BlockToolResult {
				results = append(results, [2]int{i, j})
			}
		}
	}
	const head, tail = 400, 400
	total := estimate(out)
	// The older results first; the newest but one too if that is not enough.
	order := append(results[:max(0, len(results)-keep):max(0, len(results)-keep)], results[max(0, len(results)-keep):max(0, len(results)-1)]...)
	for _, r := range order {
		if total <= budget {
			break
		}
		b := out[r[0]].Content[r[1]]
		if len(b.Text) <= head+tail+len(elidedNote)+20 {
			continue
		}
		content := make([]Block, len(out[r[0]].Content))
		copy(content, out[r[0]].Content)
		before := len(b.Text)
		b.Text = b.Text[:head] + fmt.Sprintf(elidedNote, before-head-tail) + b.Text[before-tail:]
		content[r[1]] = b
		out[r[0]] = Message{Role: out[r[0]].Role, Content: content}
		total -= int64(before-len(b.Text)) / 4
	}
	return out
}

// estimate is a conversation's size in tokens, at four bytes a token.
func estimate(conv []Message) int64 {
	var n int
	for _, m := range conv {
		for _, b := range m.Content {
			n += len(b.Text) + len(b.Input) + len(b.Name) + 16
		}
	}
	return int64(n / 4)
}
