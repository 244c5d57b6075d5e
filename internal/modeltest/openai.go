package modeltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// OpenAIResponses is a scripted OpenAI Responses API server: POST
// /v1/responses, streamed as Server-Sent Events when the request says
// "stream": true, plain JSON otherwise. It records every request, including
// ones to paths it does not serve (answered 404).
//
// Codex, given a model provider with base_url = URL()+"/v1" and wire_api =
// "responses", was seen sending streamed requests with the key as a bearer
// token; a function_call item named exec_command with {"cmd": ...} makes it
// run a command, and its next request carries a function_call_output item.
type OpenAIResponses struct {
	srv     *httptest.Server
	log     log
	next    atomic.Int64 // for response, item and call ids
	revoked sync.Map     // bearer tokens answered 401
	rules   rules        // RunOn's
}

// Revoke makes the server answer 401 to every request whose bearer token is token, as
// OpenAI and ChatGPT's backend do to a revoked or expired token.
func (s *OpenAIResponses) Revoke(token string) { s.revoked.Store(token, true) }

// ChatGPTResponses is the path of the Responses API on ChatGPT's backend, where Codex
// signed in with a ChatGPT login sends its model calls (its base URL is
// chatgpt_base_url's backend-api/codex).
const ChatGPTResponses = "/backend-api/codex/responses"

// ChatGPTAccounts is where Codex in ChatGPT mode looks up the workspaces of its login
// before its first turn (its "workspace routing discovery"): the server answers it with
// the account the request names.
const ChatGPTAccounts = "/backend-api/wham/accounts/check"

// OpenAICached is the cached_tokens of every usage the OpenAI server reports.
const OpenAICached = 64

// NewOpenAIResponses starts a scripted Responses API server on 127.0.0.1,
// closed when the test ends.
func NewOpenAIResponses(tb testing.TB) *OpenAIResponses {
	tb.Helper()
	s := &OpenAIResponses{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the server's base URL, without the "/v1" that clients add or
// expect in their base URL setting.
func (s *OpenAIResponses) URL() string { return s.srv.URL }

// Requests returns a copy of the requests received, in arrival order.
func (s *OpenAIResponses) Requests() []Request { return s.log.all() }

// Key returns the bearer token of the last request.
func (s *OpenAIResponses) Key() string { return s.log.key() }

// openaiRequest is the part of a Responses API request the script reads.
type openaiRequest struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// openaiItem is one input item: a message, a function call or its output,
// a custom tool call or its output; others are ignored.
type openaiItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
	Output  json.RawMessage `json:"output"`
}

func (s *OpenAIResponses) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		openaiError(w, http.StatusBadRequest, fmt.Sprintf("read body: %v", err))
		return
	}
	rec := Request{Path: r.URL.Path, APIKey: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "),
		Header: r.Header.Clone(), Body: body}
	var req openaiRequest
	parseErr := parseOpenAI(body, &req, &rec)
	s.log.add(rec)
	if _, ok := s.revoked.Load(rec.APIKey); ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "Your authentication token has been invalidated. Please try signing in again.",
			"type": "invalid_request_error", "code": "token_invalidated", "param": nil}})
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == ChatGPTAccounts:
		// The signed-in user's workspaces: here the one the request names, with no
		// routing constraint (Codex then keeps its configured backend).
		id := r.Header.Get("Chatgpt-Account-Id")
		writeJSON(w, map[string]any{
			"accounts": []map[string]any{{"id": id, "name": nil, "plan_type": "pro", "structure": "personal", "profile_picture_url": nil,
				"workspace_backend_origin": "NO_CONSTRAINT", "account_routing_override": "NO_CONSTRAINT"}},
			"account_ordering": []string{id}, "default_account_id": id,
		})
	case r.Method != http.MethodPost || (r.URL.Path != "/v1/responses" && r.URL.Path != ChatGPTResponses):
		openaiError(w, http.StatusNotFound, fmt.Sprintf("modeltest: no route for %s %s", r.Method, r.URL.Path))
	case parseErr != nil:
		openaiError(w, http.StatusBadRequest, parseErr.Error())
	default:
		s.answer(w, rec, req)
	}
}

// parseOpenAI decodes body into req and flattens it into rec. Developer and
// system messages go to rec.System; function outputs become user messages
// carrying ToolResults, as tool results are in the Messages API.
func parseOpenAI(body []byte, req *openaiRequest, rec *Request) error {
	if len(body) == 0 {
		return errors.New("empty request body")
	}
	if err := json.Unmarshal(body, req); err != nil {
		return fmt.Errorf("decode request: %w", err)
	}
	rec.Model, rec.Stream = req.Model, req.Stream
	for _, t := range req.Tools {
		name := t.Name
		if name == "" { // hosted tools (web_search, tool_search) have only a type
			name = t.Type
		}
		rec.Tools = append(rec.Tools, name)
	}
	system := []string{}
	if req.Instructions != "" {
		system = append(system, req.Instructions)
	}
	var items []openaiItem
	if len(req.Input) > 0 {
		var s string
		if err := json.Unmarshal(req.Input, &s); err == nil {
			items = []openaiItem{{Type: "message", Role: "user", Content: req.Input}}
		} else if err := json.Unmarshal(req.Input, &items); err != nil {
			return fmt.Errorf("decode input: %w", err)
		}
	}
	for i, it := range items {
		switch it.Type {
		case "message", "":
			text, err := openaiText(it.Content)
			if err != nil {
				return fmt.Errorf("decode input item %d: %w", i, err)
			}
			if it.Role == "developer" || it.Role == "system" {
				system = append(system, text)
				continue
			}
			rec.Messages = append(rec.Messages, Message{Role: it.Role, Text: text})
		case "function_call", "custom_tool_call", "local_shell_call":
			m := lastMessage(rec, "assistant", false)
			m.ToolUses = append(m.ToolUses, it.Name)
		case "function_call_output", "custom_tool_call_output":
			out, err := openaiText(it.Output)
			if err != nil {
				return fmt.Errorf("decode input item %d: %w", i, err)
			}
			m := lastMessage(rec, "user", true)
			m.ToolResults = append(m.ToolResults, out)
		}
	}
	rec.System = strings.Join(system, "\n")
	return nil
}

// lastMessage returns the last message of rec when it has this role (and,
// with onlyTools, no text), else appends a new one: consecutive calls and
// consecutive outputs are one turn each.
func lastMessage(rec *Request, role string, onlyTools bool) *Message {
	if n := len(rec.Messages); n > 0 && rec.Messages[n-1].Role == role && (!onlyTools || rec.Messages[n-1].Text == "") {
		return &rec.Messages[n-1]
	}
	rec.Messages = append(rec.Messages, Message{Role: role})
	return &rec.Messages[len(rec.Messages)-1]
}

// openaiText flattens content or output that is a string, a list of parts
// with text, or an object with a "content" string.
func openaiText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err == nil {
		texts := make([]string, 0, len(parts))
		for _, p := range parts {
			texts = append(texts, p.Text)
		}
		return strings.Join(texts, "\n"), nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("content is neither text, parts nor object: %w", err)
	}
	return obj.Content, nil
}
