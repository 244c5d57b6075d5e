package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// geminiWriteTools are Gemini CLI's tools that write a file, with the
// argument naming it.
var geminiWriteTools = map[string]string{"write_file": "file_path", "replace": "file_path"}

// geminiMessage is a message record of a Gemini CLI session.
type geminiMessage struct {
	ID        string          `json:"id"`
	Timestamp time.Time       `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID            string          `json:"id"`
		Name          string          `json:"name"`
		Args          json.RawMessage `json:"args"`
		Result        json.RawMessage `json:"result"`
		ResultDisplay json.RawMessage `json:"resultDisplay"`
		Status        string          `json:"status"`
		Timestamp     time.Time       `json:"timestamp"`
	} `json:"toolCalls"`
	Tokens *struct {
		Input    int64 `json:"input"`
		Output   int64 `json:"output"`
		Cached   int64 `json:"cached"`
		Thoughts int64 `json:"thoughts"`
	} `json:"tokens"`
}

// ParseGemini reads a Gemini CLI session, ~/.gemini/tmp/<project>/chats/
// session-*.jsonl, or the older single JSON document session-*.json.
//
// Gemini CLI 0.61.0 writes JSON Lines: a session header, message records
// (type "user" or "gemini", content as text or parts, toolCalls holding
// args and functionResponse results, tokens), a later record with the same
// id replacing the earlier one (a model turn is written again once its
// tools ran), and {"$set": ...} updates, whose messages are the CLI's own
// session context and are skipped like other lines that are no message. write_file and replace
// calls that did not fail give a file_change entry. An "error" record (a turn that
// failed: "[API Error: ...]") gives an error entry.
func ParseGemini(r io.Reader) ([]Entry, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read gemini session: %w", err)
	}
	var order []string
	byID := map[string]geminiMessage{}
	keep := func(raw json.RawMessage) error {
		var m geminiMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("decode message record: %w", err)
		}
		if m.Type != "user" && m.Type != "gemini" && m.Type != "error" {
			return nil
		}
		key := m.ID
		if key == "" {
			key = fmt.Sprintf("#%d", len(order))
		}
		if _, seen := byID[key]; !seen {
			order = append(order, key)
		}
		byID[key] = m
		return nil
	}
	var doc struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(data, &doc); err == nil && doc.Messages != nil {
		for i, raw := range doc.Messages {
			if err := keep(raw); err != nil {
				return nil, fmt.Errorf("parse gemini session: message %d: %w", i, err)
			}
		}
	} else if err := eachLine(bytes.NewReader(data), func(line []byte) error {
		var head struct {
			Type     string            `json:"type"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return nil // not an object: not a message record
		}
		for _, raw := range head.Messages {
			if err := keep(raw); err != nil {
				return err
			}
		}
		return keep(line)
	}); err != nil {
		return nil, fmt.Errorf("parse gemini session: %w", err)
	}

	b := newBuilder()
	for _, key := range order {
		if err := geminiEntries(b, byID[key]); err != nil {
			return nil, fmt.Errorf("parse gemini session: message %s: %w", key, err)
		}
	}
	return b.entries, nil
}

// geminiEntries adds the entries of one message record.
func geminiEntries(b *builder, m geminiMessage) error {
	txt, err := text(m.Content)
	if err != nil {
		return err
	}
	if m.Type == "error" {
		b.add(Entry{Time: m.Timestamp, Kind: KindError, Text: txt})
		return nil
	}
	if m.Type == "user" {
		// The CLI's own first message, the environment it describes, is no one's turn.
		if txt != "" && !strings.HasPrefix(strings.TrimSpace(txt), "<session_context>") {
			b.add(Entry{Time: m.Timestamp, Kind: KindUser, Text: txt})
		}
		return nil
	}
	if txt != "" {
		b.add(Entry{Time: m.Timestamp, Kind: KindAssistant, Text: txt})
	}
	for _, c := range m.ToolCalls {
		t := c.Timestamp
		if t.IsZero() {
			t = m.Timestamp
		}
		var paths []string
		if field, ok := geminiWriteTools[c.Name]; ok {
			var args map[string]any
			if json.Unmarshal(c.Args, &args) == nil {
				if p, ok := args[field].(string); ok && p != "" {
					paths = []string{p}
				}
			}
		}
		b.toolCall(t, c.Name, c.ID, c.Args, paths)
		if len(c.Result) > 0 || len(c.ResultDisplay) > 0 || c.Status != "" {
			b.toolResult(t, c.ID, geminiResult(c.Result, c.ResultDisplay), c.Status == "error" || c.Status == "cancelled")
		}
	}
	var u *Usage
	if tk := m.Tokens; tk != nil {
		u = &Usage{InputTokens: max(tk.Input-tk.Cached, 0), OutputTokens: tk.Output + tk.Thoughts, CacheReadTokens: tk.Cached}
	}
	b.endResponse(u)
	return nil
}

// geminiResult is the text of a tool result: the output (or error) of its
// functionResponse parts, else its display text.
func geminiResult(result, display json.RawMessage) string {
	var parts []struct {
		FunctionResponse struct {
			Response struct {
				Output any `json:"output"`
				Error  any `json:"error"`
			} `json:"response"`
		} `json:"functionResponse"`
	}
	var out string
	if json.Unmarshal(result, &parts) == nil {
		for _, p := range parts {
			for _, v := range []any{p.FunctionResponse.Response.Output, p.FunctionResponse.Response.Error} {
				if s, ok := v.(string); ok && s != "" {
					out += s
				}
			}
		}
	}
	if out == "" {
		var s string
		if json.Unmarshal(display, &s) == nil {
			out = s
		}
	}
	return out
}
