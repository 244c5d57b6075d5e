package transcript

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// openCodeExport is what `opencode export SESSION_ID` prints (OpenCode 1.18): the
// session, then its messages, each with its parts: text, tool (with its input, output
// and status), and step-start/step-finish marking each model response (with its tokens).
type openCodeExport struct {
	Messages []struct {
		Info struct {
			Role string `json:"role"`
			Time struct {
				Created int64 `json:"created"`
			} `json:"time"`
		} `json:"info"`
		Parts []struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			Synthetic bool   `json:"synthetic"`
			Tool      string `json:"tool"`
			CallID    string `json:"callID"`
			State     struct {
				Status string          `json:"status"`
				Input  json.RawMessage `json:"input"`
				Output string          `json:"output"`
				Error  string          `json:"error"`
				Time   struct {
					Start int64 `json:"start"`
					End   int64 `json:"end"`
				} `json:"time"`
			} `json:"state"`
			Tokens *struct {
				Input     int64 `json:"input"`
				Output    int64 `json:"output"`
				Reasoning int64 `json:"reasoning"`
				Cache     struct {
					Read  int64 `json:"read"`
					Write int64 `json:"write"`
				} `json:"cache"`
			} `json:"tokens"`
			Time struct {
				Start int64 `json:"start"`
			} `json:"time"`
		} `json:"parts"`
	} `json:"messages"`
}

// ParseOpenCode reads an OpenCode session as `opencode export` prints it (OpenCode keeps
// its conversations in SQLite; the export is the documented way out): the user's
// messages, the model's text and tool calls with their results, and the tokens of each
// model response.
func ParseOpenCode(r io.Reader) ([]Entry, error) {
	var ex openCodeExport
	if err := json.NewDecoder(r).Decode(&ex); err != nil {
		return nil, fmt.Errorf("decode opencode export: %w", err)
	}
	b := newBuilder()
	for _, m := range ex.Messages {
		at := ms(m.Info.Time.Created)
		for _, p := range m.Parts {
			t := at
			if p.Time.Start > 0 {
				t = ms(p.Time.Start)
			}
			switch p.Type {
			case "text":
				txt := strings.TrimSpace(p.Text)
				if txt == "" || p.Synthetic {
					continue
				}
				kind := KindAssistant
				if m.Info.Role == "user" {
					kind = KindUser
				}
				b.add(Entry{Time: t, Kind: kind, Text: txt})
			case "tool":
				if p.State.Time.Start > 0 {
					t = ms(p.State.Time.Start)
				}
				b.toolCall(t, p.Tool, p.CallID, p.State.Input, openCodePaths(p.Tool, p.State.Input))
				switch p.State.Status {
				case "completed":
					b.toolResult(ms(max(p.State.Time.End, p.State.Time.Start)), p.CallID, p.State.Output, false)
				case "error":
					b.toolResult(ms(max(p.State.Time.End, p.State.Time.Start)), p.CallID, p.State.Error, true)
				}
			case "step-finish":
				if tk := p.Tokens; tk != nil {
					b.endResponse(&Usage{InputTokens: tk.Input, OutputTokens: tk.Output + tk.Reasoning,
						CacheReadTokens: tk.Cache.Read, CacheWriteTokens: tk.Cache.Write})
				}
			}
		}
	}
	return b.entries, nil
}

// openCodePaths are the files a write or edit call changes.
func openCodePaths(tool string, input json.RawMessage) []string {
	if tool != "write" && tool != "edit" {
		return nil
	}
	var in struct {
		FilePath string `json:"filePath"`
	}
	if json.Unmarshal(input, &in) != nil || in.FilePath == "" {
		return nil
	}
	return []string{in.FilePath}
}

// ms is a time OpenCode records, in milliseconds since the epoch.
func ms(v int64) time.Time { return time.UnixMilli(v).UTC() }
