// Package transcript reads the native transcripts of agent CLIs (Claude
// Code, Codex, Gemini CLI) into one schema, so that paddock can show, count
// and search any agent's conversation the same way.
package transcript

import (
	"encoding/json"
	"slices"
	"time"
)

// Entry kinds.
const (
	// KindUser is a message the user typed.
	KindUser = "user"
	// KindAssistant is text the model answered.
	KindAssistant = "assistant"
	// KindToolCall is a tool the model called, with its input.
	KindToolCall = "tool_call"
	// KindToolResult is what a tool call returned.
	KindToolResult = "tool_result"
	// KindFileChange is a file a successful tool call wrote or edited.
	KindFileChange = "file_change"
	// KindError is the agent's report that a turn failed (an API error it gave up
	// on), in place of the model's answer.
	KindError = "error"
)

// Entry is one event of a conversation.
type Entry struct {
	// Time is when the agent recorded the event.
	Time time.Time `json:"time"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Text is the message text, for user and assistant entries, and the error's, for
	// error entries.
	Text string `json:"text,omitempty"`
	// Tool is the tool name, for tool_call, tool_result and file_change.
	Tool string `json:"tool,omitempty"`
	// CallID ties a tool_call to its tool_result and file_change entries.
	CallID string `json:"call_id,omitempty"`
	// Input is the tool input as JSON; free-form input (a Codex patch) is a
	// JSON string.
	Input json.RawMessage `json:"input,omitempty"`
	// Output is the tool result text.
	Output string `json:"output,omitempty"`
	// Path is the file written or edited, for file_change entries.
	Path string `json:"path,omitempty"`
	// Usage is the token usage of the model response that produced this
	// entry, set on the first entry (assistant or tool_call) of each
	// response, so that summing all entries counts each response once.
	Usage *Usage `json:"usage,omitempty"`
}

// Usage counts the tokens of model responses. The fields do not overlap:
// InputTokens is the input that was neither read from nor written to the
// prompt cache, so the four add up to everything the model was sent and
// answered.
type Usage struct {
	// InputTokens is the uncached input.
	InputTokens int64 `json:"input_tokens"`
	// OutputTokens is the output, reasoning included.
	OutputTokens int64 `json:"output_tokens"`
	// CacheReadTokens is the input read from the prompt cache.
	CacheReadTokens int64 `json:"cache_read_tokens"`
	// CacheWriteTokens is the input written to the prompt cache.
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
}

// Total is every kind of token together, as token budgets count them.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// Summary is what a listing shows about a conversation.
type Summary struct {
	// Messages counts user and assistant entries.
	Messages int `json:"messages"`
	// LastActivity is the time of the latest entry, zero when there is none.
	LastActivity time.Time `json:"last_activity"`
	// Usage is the total token usage.
	Usage Usage `json:"usage"`
	// Files are the paths changed, each once, in the order first changed.
	Files []string `json:"files,omitempty"`
}

// Summarize counts the messages, finds the last activity and adds up the
// usage and changed files of entries.
func Summarize(entries []Entry) Summary {
	var s Summary
	for _, e := range entries {
		switch e.Kind {
		case KindUser, KindAssistant:
			s.Messages++
		case KindFileChange:
			if !slices.Contains(s.Files, e.Path) {
				s.Files = append(s.Files, e.Path)
			}
		}
		if e.Time.After(s.LastActivity) {
			s.LastActivity = e.Time
		}
		if e.Usage != nil {
			s.Usage.Add(*e.Usage)
		}
	}
	return s
}
