package modeltest

import (
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Request is one request a scripted server received, flattened to what tests
// look at.
type Request struct {
	// Path is the URL path, without the query ("/v1/messages").
	Path string
	// Model is the model the client asked for.
	Model string
	// APIKey is the key the client sent: x-api-key for Anthropic (else its
	// bearer token), the bearer token of the Authorization header for OpenAI.
	APIKey string
	// Stream reports whether the client asked for a streamed answer.
	Stream bool
	// System is the concatenated system text (Anthropic "system", OpenAI
	// "instructions" and system/developer messages).
	System string
	// Tools are the names of the tools offered, in the order sent; a tool
	// with a type but no name (OpenAI's hosted web_search) is named by type.
	Tools []string
	// Messages are the conversation turns sent, in order.
	Messages []Message
	// Header is a copy of the request headers.
	Header http.Header
	// Body is the raw request body, for what the flattened fields leave out.
	Body []byte
}

// Message is one conversation turn of a [Request].
type Message struct {
	// Role is "user" or "assistant".
	Role string
	// Text is the text content, blocks joined by newlines.
	Text string
	// ToolUses are the names of the tools the assistant called in this turn
	// (Anthropic tool_use, OpenAI function_call).
	ToolUses []string
	// ToolResults are the texts of the tool results this turn carries
	// (Anthropic tool_result, OpenAI function_call_output).
	ToolResults []string
}

// Contains reports whether any message of the request contains s in its text,
// tool names or tool results: handy to check that a server saw the earlier
// turns of a conversation.
func (r Request) Contains(s string) bool {
	for _, m := range r.Messages {
		if strings.Contains(m.Text, s) {
			return true
		}
		for _, t := range m.ToolUses {
			if strings.Contains(t, s) {
				return true
			}
		}
		for _, t := range m.ToolResults {
			if strings.Contains(t, s) {
				return true
			}
		}
	}
	return false
}

// HasTool reports whether the request offered a tool with this name.
func (r Request) HasTool(name string) bool {
	return slices.Contains(r.Tools, name)
}

// log is the request record shared by the servers; safe for concurrent use.
type log struct {
	mu   sync.Mutex
	reqs []Request
}

func (l *log) add(r Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
}

// all returns a copy of the recorded requests, in arrival order.
func (l *log) all() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.reqs...)
}

// key returns the API key of the last request, or "" before any.
func (l *log) key() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.reqs) == 0 {
		return ""
	}
	return l.reqs[len(l.reqs)-1].APIKey
}
