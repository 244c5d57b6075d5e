// Package transcript reads the native transcripts of agent CLIs (Claude
// Code, Codex, Gemini CLI) into one schema, so that paddock can show, count
// and search any agent's conversation the same way.
package transcript

import (
	"slices"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/api/wire/tokens"
)

// Entry kinds.
const (
	// KindUser is a message the user typed.
	KindUser = wire.EntryUser
	// KindAssistant is text the model answered.
	KindAssistant = wire.EntryAssistant
	// KindToolCall is a tool the model called, with its input.
	KindToolCall = wire.EntryToolCall
	// KindToolResult is what a tool call returned.
	KindToolResult = wire.EntryToolResult
	// KindFileChange is a file a successful tool call wrote or edited.
	KindFileChange = wire.EntryFileChange
	// KindError is the agent's report that a turn failed (an API error it gave up
	// on), in place of the model's answer.
	KindError = wire.EntryError
)

// Entry is wire.TranscriptEntry (the API's wire type).
type Entry = wire.TranscriptEntry

// Usage counts the tokens of model responses (tokens.Usage).
type Usage = tokens.Usage

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
