package transcript

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// claudeWriteTools are Claude Code's tools that write a file, with the input
// field naming it.
var claudeWriteTools = map[string]string{
	"Write":        "file_path",
	"Edit":         "file_path",
	"MultiEdit":    "file_path",
	"NotebookEdit": "notebook_path",
}

// claudeLine is a line of a Claude Code transcript that holds a message.
type claudeLine struct {
	Type        string    `json:"type"`
	Timestamp   time.Time `json:"timestamp"`
	IsSidechain bool      `json:"isSidechain"`
	IsMeta      bool      `json:"isMeta"`
	// IsAPIErrorMessage marks the assistant line Claude Code writes itself when a
	// turn fails ("API Error: ..."), which no model said.
	IsAPIErrorMessage bool `json:"isApiErrorMessage"`
	Message           struct {
		ID      string          `json:"id"`
		Content json.RawMessage `json:"content"`
		Usage   *struct {
			InputTokens              int64 `json:"input_tokens"`
			OutputTokens             int64 `json:"output_tokens"`
			CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
			CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
}

// claudeBlock is a content block of a Claude message.
type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ParseClaude reads a Claude Code transcript,
// ~/.claude/projects/<cwd with every / replaced by ->/<session-id>.jsonl
// (one file per session; --resume appends to it).
//
// Only "user" and "assistant" lines are read; the many other line types
// (attachments, queue operations, API request records, cost state...) are
// skipped, and so are sidechain lines (a subagent's own conversation) and
// meta user lines (text Claude Code added, not typed). Claude Code writes
// one line per content block of a model response, each repeating the
// response's usage: it is counted once, on the response's first entry,
// taken from the response's last line (earlier versions wrote partial
// output counts on the first lines).
// The line Claude Code writes when a turn fails (isApiErrorMessage) is an
// error entry. Write, Edit, MultiEdit and NotebookEdit calls whose result is not an error
// give a file_change entry.
func ParseClaude(r io.Reader) ([]Entry, error) {
	b := newBuilder()
	// responses follows each model response by message id: the index of
	// its first entry (-1 before one) and its latest usage.
	type response struct {
		first int
		usage *Usage
	}
	responses := map[string]*response{}
	var order []*response
	err := eachLine(r, func(line []byte) error {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return err
		}
		if head.Type != "user" && head.Type != "assistant" {
			return nil
		}
		var l claudeLine
		if err := json.Unmarshal(line, &l); err != nil {
			return fmt.Errorf("decode %s line: %w", head.Type, err)
		}
		if l.IsSidechain {
			return nil
		}
		blocks, err := claudeBlocks(l.Message.Content)
		if err != nil {
			return fmt.Errorf("decode %s content: %w", l.Type, err)
		}
		if l.Type == "user" {
			if !l.IsMeta {
				claudeUser(b, l.Timestamp, blocks)
			}
			return nil
		}
		if l.IsAPIErrorMessage {
			claudeError(b, l.Timestamp, blocks)
			return nil
		}
		resp := responses[l.Message.ID]
		if resp == nil || l.Message.ID == "" {
			resp = &response{first: -1}
			responses[l.Message.ID] = resp
			order = append(order, resp)
		}
		if u := l.Message.Usage; u != nil {
			resp.usage = &Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
				CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
		}
		n := len(b.entries)
		if err := claudeAssistant(b, l.Timestamp, blocks); err != nil {
			return err
		}
		if resp.first < 0 && len(b.entries) > n {
			resp.first = n
		}
		if resp.first >= 0 && resp.usage != nil {
			u := *resp.usage // the latest line's usage is the most complete
			b.entries[resp.first].Usage = &u
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parse claude transcript: %w", err)
	}
	for _, resp := range order {
		if resp.first < 0 && resp.usage != nil {
			b.orphanUsage(*resp.usage)
		}
	}
	return b.entries, nil
}

// claudeBlocks decodes message content, a string or a list of blocks.
func claudeBlocks(raw json.RawMessage) ([]claudeBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []claudeBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []claudeBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	return blocks, nil
}

// claudeUser adds the entries of a user line: its text, and the results
// of tool calls.
func claudeUser(b *builder, t time.Time, blocks []claudeBlock) {
	var texts []string
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			if strings.TrimSpace(bl.Text) != "" {
				texts = append(texts, bl.Text)
			}
		case "tool_result":
			out, err := text(bl.Content)
			if err != nil {
				out = string(bl.Content)
			}
			b.toolResult(t, bl.ToolUseID, out, bl.IsError)
		}
	}
	if len(texts) > 0 {
		b.add(Entry{Time: t, Kind: KindUser, Text: strings.Join(texts, "\n")})
	}
}

// claudeError adds the error entry of a failed turn's line.
func claudeError(b *builder, t time.Time, blocks []claudeBlock) {
	var texts []string
	for _, bl := range blocks {
		if bl.Type == "text" && strings.TrimSpace(bl.Text) != "" {
			texts = append(texts, bl.Text)
		}
	}
	b.add(Entry{Time: t, Kind: KindError, Text: strings.Join(texts, "\n")})
}

// claudeAssistant adds the entries of an assistant line: text and tool
// calls (thinking is skipped).
func claudeAssistant(b *builder, t time.Time, blocks []claudeBlock) error {
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			if strings.TrimSpace(bl.Text) != "" {
				b.add(Entry{Time: t, Kind: KindAssistant, Text: bl.Text})
			}
		case "tool_use":
			var paths []string
			if field, ok := claudeWriteTools[bl.Name]; ok {
				var in map[string]any
				if err := json.Unmarshal(bl.Input, &in); err != nil {
					return fmt.Errorf("decode %s input: %w", bl.Name, err)
				}
				if p, ok := in[field].(string); ok && p != "" {
					paths = []string{p}
				}
			}
			b.toolCall(t, bl.Name, bl.ID, bl.Input, paths)
		}
	}
	return nil
}
