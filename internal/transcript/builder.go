package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// eachLine calls fn with every non-blank line of a JSON Lines stream. A
// line that is not JSON, or that fn rejects, is an error naming its number.
// A last line with no newline that is not JSON yet is one its agent is still
// writing: it is left for the next read, not an error.
func eachLine(r io.Reader, fn func(line []byte) error) error {
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read line %d: %w", n, err)
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			if !json.Valid(trimmed) {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("line %d: not JSON", n)
			}
			if ferr := fn(trimmed); ferr != nil {
				return fmt.Errorf("line %d: %w", n, ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// call is what a builder remembers of a tool call until its result.
type call struct {
	tool  string
	paths []string // files the call writes
}

// builder collects entries, pairs tool results with their calls, and
// places token usage on the entry that begins each model response.
type builder struct {
	entries []Entry
	calls   map[string]call
	// start is the index of the first assistant or tool_call entry of the
	// response in progress, -1 when none yet.
	start int
}

func newBuilder() *builder {
	return &builder{calls: map[string]call{}, start: -1}
}

// add appends e and returns its index.
func (b *builder) add(e Entry) int {
	b.entries = append(b.entries, e)
	i := len(b.entries) - 1
	if (e.Kind == KindAssistant || e.Kind == KindToolCall) && b.start < 0 {
		b.start = i
	}
	return i
}

// toolCall records a call, remembering the files it writes.
func (b *builder) toolCall(t time.Time, tool, id string, input json.RawMessage, paths []string) int {
	b.calls[id] = call{tool: tool, paths: paths}
	return b.add(Entry{Time: t, Kind: KindToolCall, Tool: tool, CallID: id, Input: input})
}

// toolResult records a call's result and, unless it failed, one
// file_change entry per file the call writes.
func (b *builder) toolResult(t time.Time, id, output string, failed bool) {
	c := b.calls[id]
	b.add(Entry{Time: t, Kind: KindToolResult, Tool: c.tool, CallID: id, Output: output})
	if failed {
		return
	}
	for _, p := range c.paths {
		b.add(Entry{Time: t, Kind: KindFileChange, Tool: c.tool, CallID: id, Path: p})
	}
}

// endResponse places u, when known, on the first entry of the response in
// progress, and starts the next response.
func (b *builder) endResponse(u *Usage) {
	i := b.start
	b.start = -1
	switch {
	case u == nil:
	case i < 0:
		b.orphanUsage(*u)
	default:
		b.addUsage(i, *u)
	}
}

// addUsage adds u to the usage of entry i.
func (b *builder) addUsage(i int, u Usage) {
	if b.entries[i].Usage == nil {
		b.entries[i].Usage = &Usage{}
	}
	b.entries[i].Usage.Add(u)
}

// orphanUsage places the usage of a response that left no entry (only
// reasoning, say) on the latest assistant or tool_call entry, so that no
// usage is lost from the totals. With no such entry, there is nothing to
// place it on and it is dropped.
func (b *builder) orphanUsage(u Usage) {
	for j := len(b.entries) - 1; j >= 0; j-- {
		if k := b.entries[j].Kind; k == KindAssistant || k == KindToolCall {
			b.addUsage(j, u)
			return
		}
	}
}

// jsonString encodes s as a JSON string, for free-form tool input.
func jsonString(s string) json.RawMessage {
	raw, _ := json.Marshal(s)
	return raw
}

// text decodes content that is a string, or a list of parts whose "text"
// fields are joined by newlines.
func text(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content is neither text nor a list of parts: %w", err)
	}
	var b []byte
	for _, p := range parts {
		if p.Text == "" {
			continue
		}
		if len(b) > 0 {
			b = append(b, '\n')
		}
		b = append(b, p.Text...)
	}
	return string(b), nil
}
