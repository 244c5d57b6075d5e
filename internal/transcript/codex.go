package transcript

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// codexContextPrefixes start the user-role messages Codex writes itself
// (environment, AGENTS.md and user instructions) rather than the user.
var codexContextPrefixes = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>"}

// codexItem is the payload of a response_item line.
type codexItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
}

// codexUsage is Codex's token usage record.
type codexUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
}

// usage converts Codex's usage, whose input_tokens count the cached input
// too (as OpenAI's do), into Usage's non-overlapping fields.
func (u codexUsage) usage() Usage {
	return Usage{
		InputTokens:      max(u.InputTokens-u.CachedInputTokens-u.CacheWriteInputTokens, 0),
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.CachedInputTokens,
		CacheWriteTokens: u.CacheWriteInputTokens,
	}
}

// ParseCodex reads a Codex rollout, $CODEX_HOME/sessions/YYYY/MM/DD/
// rollout-*.jsonl (one file per thread; `codex exec resume` appends to it).
//
// Entries come from the response_item lines: user and assistant messages
// (developer messages and the context Codex adds as user messages are
// skipped), function and custom tool calls and their outputs. Usage comes
// from token_usage_record lines, one per model response, or in rollouts
// without them from the last_token_usage of token_count events. apply_patch
// calls (the custom tool, or a patch given to a shell command) give one
// file_change entry per file the patch adds, updates, deletes or moves to,
// made absolute against the session's working directory, unless the call's
// output reports a failure. Files written by shell commands are not seen. A
// turn that ended in an error (a task_complete event with one) gives an
// error entry.
func ParseCodex(r io.Reader) ([]Entry, error) {
	b := newBuilder()
	cwd := ""
	records := false // whether token_usage_record lines were seen
	err := eachLine(r, func(line []byte) error {
		var l struct {
			Timestamp time.Time       `json:"timestamp"`
			Type      string          `json:"type"`
			Payload   json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return err
		}
		switch l.Type {
		case "session_meta", "turn_context":
			var p struct {
				Cwd string `json:"cwd"`
			}
			if err := json.Unmarshal(l.Payload, &p); err != nil {
				return fmt.Errorf("decode %s: %w", l.Type, err)
			}
			if p.Cwd != "" {
				cwd = p.Cwd
			}
		case "token_usage_record":
			var p struct {
				Usage codexUsage `json:"usage"`
			}
			if err := json.Unmarshal(l.Payload, &p); err != nil {
				return fmt.Errorf("decode token_usage_record: %w", err)
			}
			records = true
			u := p.Usage.usage()
			b.endResponse(&u)
		case "event_msg":
			var p struct {
				Type string `json:"type"`
				Info *struct {
					Last *codexUsage `json:"last_token_usage"`
				} `json:"info"`
				Error *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(l.Payload, &p); err != nil {
				return fmt.Errorf("decode event_msg: %w", err)
			}
			if p.Type == "task_complete" && p.Error != nil {
				b.add(Entry{Time: l.Timestamp, Kind: KindError, Text: p.Error.Message})
			}
			if p.Type == "token_count" && !records && p.Info != nil && p.Info.Last != nil {
				u := p.Info.Last.usage()
				b.endResponse(&u)
			}
		case "response_item":
			var it codexItem
			if err := json.Unmarshal(l.Payload, &it); err != nil {
				return fmt.Errorf("decode response_item: %w", err)
			}
			return codexResponseItem(b, l.Timestamp, it, cwd)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parse codex rollout: %w", err)
	}
	return b.entries, nil
}

// codexResponseItem adds the entries of one response item.
func codexResponseItem(b *builder, t time.Time, it codexItem, cwd string) error {
	switch it.Type {
	case "message":
		txt, err := text(it.Content)
		if err != nil {
			return fmt.Errorf("decode %s message: %w", it.Role, err)
		}
		switch {
		case strings.TrimSpace(txt) == "":
		case it.Role == "assistant":
			b.add(Entry{Time: t, Kind: KindAssistant, Text: txt})
		case it.Role == "user" && !codexContext(txt):
			b.add(Entry{Time: t, Kind: KindUser, Text: txt})
		}
	case "function_call":
		input := json.RawMessage(it.Arguments)
		if !json.Valid(input) {
			input = jsonString(it.Arguments)
		}
		b.toolCall(t, it.Name, it.CallID, input, patchPaths(argsPatch(input), cwd))
	case "custom_tool_call":
		b.toolCall(t, it.Name, it.CallID, jsonString(it.Input), patchPaths(findPatch(it.Input), cwd))
	case "local_shell_call":
		b.toolCall(t, "local_shell", it.CallID, it.Action, patchPaths(argsPatch(it.Action), cwd))
	case "function_call_output", "custom_tool_call_output":
		out, failed := codexOutput(it.Output)
		b.toolResult(t, it.CallID, out, failed)
	}
	return nil
}

// codexContext reports whether a user-role message is context Codex added.
func codexContext(txt string) bool {
	txt = strings.TrimSpace(txt)
	for _, p := range codexContextPrefixes {
		if strings.HasPrefix(txt, p) {
			return true
		}
	}
	return false
}

// codexOutput decodes a tool output and tells whether it reports a
// failure. Outputs seen: plain text starting "Exit code: N" (0.169), a list
// of content parts, and, in older rollouts, a JSON string holding
// {"output": ..., "metadata": {"exit_code": N}}.
func codexOutput(raw json.RawMessage) (string, bool) {
	out, err := text(raw)
	if err != nil {
		var obj struct {
			Content string `json:"content"`
			Success *bool  `json:"success"`
		}
		if json.Unmarshal(raw, &obj) == nil {
			return obj.Content, obj.Success != nil && !*obj.Success
		}
		return string(raw), false
	}
	var old struct {
		Output   *string `json:"output"`
		Metadata struct {
			ExitCode int `json:"exit_code"`
		} `json:"metadata"`
	}
	if strings.HasPrefix(out, "{") && json.Unmarshal([]byte(out), &old) == nil && old.Output != nil {
		return *old.Output, old.Metadata.ExitCode != 0
	}
	if rest, ok := strings.CutPrefix(out, "Exit code: "); ok {
		code, _, _ := strings.Cut(rest, "\n")
		if n, err := strconv.Atoi(strings.TrimSpace(code)); err == nil && n != 0 {
			return out, true
		}
	}
	return out, strings.Contains(out, "apply_patch verification failed")
}

// findPatch returns the apply_patch patch in s, or "": s is the patch
// itself, or a command running apply_patch with a here-document.
func findPatch(s string) string {
	const begin, end = "*** Begin Patch", "*** End Patch"
	i := strings.Index(s, begin)
	if i < 0 {
		return ""
	}
	s = s[i:]
	if j := strings.Index(s, end); j >= 0 {
		s = s[:j+len(end)]
	}
	return s
}

// argsPatch finds a patch among the string values of a call's JSON
// arguments ({"input": patch}, {"cmd": "apply_patch <<EOF ..."},
// {"command": ["apply_patch", patch]}).
func argsPatch(args json.RawMessage) string {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return findPatch(string(args))
	}
	var walk func(v any) string
	walk = func(v any) string {
		switch v := v.(type) {
		case string:
			return findPatch(v)
		case []any:
			for _, x := range v {
				if p := walk(x); p != "" {
					return p
				}
			}
		case map[string]any:
			for _, x := range v {
				if p := walk(x); p != "" {
					return p
				}
			}
		}
		return ""
	}
	return walk(v)
}

// patchPaths lists the files a patch adds, updates, deletes or moves to,
// each once, relative paths made absolute against cwd.
func patchPaths(patch, cwd string) []string {
	var paths []string
	for line := range strings.Lines(patch) {
		line = strings.TrimSpace(line)
		for _, prefix := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			p, ok := strings.CutPrefix(line, prefix)
			if !ok || p == "" {
				continue
			}
			if !filepath.IsAbs(p) && cwd != "" {
				p = filepath.Join(cwd, p)
			}
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	return paths
}
