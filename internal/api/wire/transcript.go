package wire

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire/tokens"
)

// The kinds of a transcript's entries (TranscriptEntry.Kind).
const (
	// EntryUser is a message the user typed.
	EntryUser = "user"
	// EntryAssistant is text the model answered.
	EntryAssistant = "assistant"
	// EntryToolCall is a tool the model called, with its input.
	EntryToolCall = "tool_call"
	// EntryToolResult is what a tool call returned.
	EntryToolResult = "tool_result"
	// EntryFileChange is a file a successful tool call wrote or edited.
	EntryFileChange = "file_change"
	// EntryError is the agent's report that a turn failed (an API error it gave up
	// on), in place of the model's answer.
	EntryError = "error"
)

// TranscriptEntry is one event of a conversation, in the one schema every agent's
// transcript is read into (GET /v1/sandboxes/NAME/sessions/SESSION/transcript).
type TranscriptEntry struct {
	// Time is when the agent recorded the event.
	Time time.Time `json:"time"`
	// Kind is one of the Entry constants.
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
	Usage *tokens.Usage `json:"usage,omitempty"`
}

// InputText is a tool call's input as a person reads it: free-form input (a Codex
// patch) as its text, and JSON input as written, but with the escapes Go's encoder
// puts in for HTML (\u003c, \u003e, \u0026) turned back into <, > and &. Every hop
// through encoding/json (the daemon's answer, a Codex input made JSON) adds them,
// and a shell command reads "cd /x \u0026\u0026 make 2\u003e\u00261" with them.
func (e TranscriptEntry) InputText() string {
	raw := strings.TrimSpace(string(e.Input))
	if strings.HasPrefix(raw, `"`) {
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil {
			return s
		}
	}
	return unescapeHTML(raw)
}

// htmlEscapes are the escapes encoding/json writes for HTML's sake, in the forms it
// writes them.
var htmlEscapes = map[string]byte{`u003c`: '<', `u003e`: '>', `u0026`: '&', `u003C`: '<', `u003E`: '>'}

// unescapeHTML turns the HTML escapes in raw's strings back into their characters,
// leaving every other escape (\", \\, \n, \u2028...) as it is. It reads escapes
// whole, so an escaped backslash followed by "u003e" stays as it was.
func unescapeHTML(raw string) string {
	if !strings.Contains(raw, `\u00`) {
		return raw
	}
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			b.WriteByte(c)
			continue
		}
		if raw[i+1] == 'u' && i+6 <= len(raw) {
			if ch, ok := htmlEscapes[raw[i+1:i+6]]; ok {
				b.WriteByte(ch)
				i += 5
				continue
			}
		}
		// Any other escape is copied whole: the backslash and the character it escapes.
		b.WriteByte(c)
		b.WriteByte(raw[i+1])
		i++
	}
	return b.String()
}
