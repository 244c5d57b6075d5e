package transcript

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// qwenRecord is one line of a Qwen Code chat, ~/.qwen/projects/<dir>/chats/<session id>.jsonl:
// records linked by parentUuid, of type "user", "assistant" or "system", the first two
// holding a Gemini-style message (role and parts: text, functionCall, functionResponse).
type qwenRecord struct {
	Type       string    `json:"type"`
	Provenance string    `json:"provenance"`
	Timestamp  time.Time `json:"timestamp"`
	Message    *struct {
		Role  string `json:"role"`
		Parts []struct {
			Text         string `json:"text"`
			Thought      bool   `json:"thought"`
			FunctionCall *struct {
				ID   string          `json:"id"`
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			} `json:"functionCall"`
			FunctionResponse *struct {
				ID       string          `json:"id"`
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"message"`
	UsageMetadata *struct {
		Prompt     int64 `json:"promptTokenCount"`
		Candidates int64 `json:"candidatesTokenCount"`
		Cached     int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
}

// ParseQwen reads a Qwen Code 0.24 chat: user turns, the model's text and tool calls, and
// the tool results (function responses) the CLI sends back; system records (telemetry,
// snapshots) are skipped.
func ParseQwen(r io.Reader) ([]Entry, error) {
	b := newBuilder()
	err := eachLine(r, func(line []byte) error {
		var rec qwenRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("decode record: %w", err)
		}
		if rec.Message == nil || (rec.Type != "user" && rec.Type != "assistant") {
			return nil
		}
		model := rec.Type == "assistant" || rec.Message.Role == "model"
		var texts []string
		for _, p := range rec.Message.Parts {
			switch {
			case p.FunctionCall != nil:
				b.toolCall(rec.Timestamp, p.FunctionCall.Name, p.FunctionCall.ID, p.FunctionCall.Args, nil)
			case p.FunctionResponse != nil:
				b.toolResult(rec.Timestamp, p.FunctionResponse.ID, qwenOutput(p.FunctionResponse.Response), false)
			case p.Text != "" && !p.Thought:
				texts = append(texts, p.Text)
			}
		}
		if txt := strings.TrimSpace(strings.Join(texts, "\n")); txt != "" {
			kind := KindUser
			if model {
				kind = KindAssistant
			}
			if kind == KindUser && strings.HasPrefix(txt, "<system-reminder>") {
				return nil // the CLI's own context, not the user's words
			}
			b.add(Entry{Time: rec.Timestamp, Kind: kind, Text: txt})
		}
		if model {
			var u *Usage
			if m := rec.UsageMetadata; m != nil {
				u = &Usage{InputTokens: max(m.Prompt-m.Cached, 0), OutputTokens: m.Candidates, CacheReadTokens: m.Cached}
			}
			b.endResponse(u)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parse qwen chat: %w", err)
	}
	return b.entries, nil
}

// qwenOutput is the text of a function response: its output (or error), else the JSON.
func qwenOutput(raw json.RawMessage) string {
	var v struct {
		Output any `json:"output"`
		Error  any `json:"error"`
	}
	if json.Unmarshal(raw, &v) == nil {
		for _, x := range []any{v.Output, v.Error} {
			if s, ok := x.(string); ok && s != "" {
				return s
			}
		}
	}
	return string(raw)
}
