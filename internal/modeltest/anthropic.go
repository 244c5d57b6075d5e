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
	"time"
)

// Anthropic is a scripted Anthropic Messages API server: POST /v1/messages
// (streamed as Server-Sent Events when the request says "stream": true, plain
// JSON otherwise) and POST /v1/messages/count_tokens. It records every
// request, including ones to paths it does not serve (answered 404).
//
// Claude Code, pointed at it with ANTHROPIC_BASE_URL, was seen sending
// POST /v1/messages?beta=true with the key in x-api-key, streaming, with its
// Bash/Write/Edit... tools; see the package documentation for the script.
type Anthropic struct {
	srv   *httptest.Server
	log   log
	next  atomic.Int64 // for message and tool-use ids
	delay atomic.Int64 // a time.Duration before each answer

	mu     sync.Mutex
	faults []fault // answers to get wrong on purpose, in order

	revoked sync.Map // tokens answered 401, as a revoked login's
	rules   rules    // RunOn's
}

// Revoke makes the server answer 401 authentication_error to every request carrying
// token (as x-api-key or bearer), as Anthropic does to a revoked login.
func (s *Anthropic) Revoke(token string) { s.revoked.Store(token, true) }

// Fixed cache figures in every usage the Anthropic server reports, distinct
// so that a reader of usage can tell the fields apart.
const (
	// AnthropicCacheRead is the cache_read_input_tokens of every answer.
	AnthropicCacheRead = 64
	// AnthropicCacheWrite is the cache_creation_input_tokens of every answer.
	AnthropicCacheWrite = 16
)

// NewAnthropic starts a scripted Anthropic server on 127.0.0.1, closed when
// the test ends.
func NewAnthropic(tb testing.TB) *Anthropic {
	tb.Helper()
	s := &Anthropic{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the server's base URL, to use as ANTHROPIC_BASE_URL.
func (s *Anthropic) URL() string { return s.srv.URL }

// Requests returns a copy of the requests received, in arrival order.
func (s *Anthropic) Requests() []Request { return s.log.all() }

// Key returns the x-api-key of the last request (or its bearer token, when
// it has no x-api-key), so tests can check that the real key arrived through
// a proxy.
func (s *Anthropic) Key() string { return s.log.key() }

// anthropicRequest is the part of a Messages API request the script reads.
type anthropicRequest struct {
	Model  string                  `json:"model"`
	Stream bool                    `json:"stream"`
	System json.RawMessage         `json:"system"`
	Tools  []struct{ Name string } `json:"tools"`
	// OutputConfig asks for structured output: Claude Code's title side
	// call wants JSON matching a schema.
	OutputConfig struct {
		Format *struct {
			Type   string `json:"type"`
			Schema struct {
				Properties map[string]struct {
					Type string `json:"type"`
				} `json:"properties"`
				Required []string `json:"required"`
			} `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// anthropicBlock is one content block: text, tool_use, tool_result, and
// others whose type the script ignores.
type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Content json.RawMessage `json:"content"`
}

func (s *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		anthropicError(w, http.StatusBadRequest, fmt.Sprintf("read body: %v", err))
		return
	}
	key := r.Header.Get("X-Api-Key")
	if key == "" { // ANTHROPIC_AUTH_TOKEN is sent as a bearer token
		key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	rec := Request{Path: r.URL.Path, APIKey: key, Header: r.Header.Clone(), Body: body}
	var req anthropicRequest
	parseErr := parseAnthropic(body, &req, &rec)
	s.log.add(rec)

	if _, ok := s.revoked.Load(key); ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error",
			"error": map[string]string{"type": "authentication_error", "message": "OAuth token has been revoked. Please obtain a new token."}})
		return
	}
	switch {
	case r.Method != http.MethodPost || (r.URL.Path != "/v1/messages" && r.URL.Path != "/v1/messages/count_tokens"):
		anthropicError(w, http.StatusNotFound, fmt.Sprintf("modeltest: no route for %s %s", r.Method, r.URL.Path))
	case parseErr != nil:
		anthropicError(w, http.StatusBadRequest, parseErr.Error())
	case r.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, map[string]int64{"input_tokens": tokens(string(body))})
	default:
		if d := time.Duration(s.delay.Load()); d > 0 {
			time.Sleep(d)
		}
		if f, ok := s.takeFault(); ok {
			if f.drop && req.Stream {
				dropStream(w, req.Model)
				return
			}
			if f.status != 0 {
				failAnswer(w, f.status)
				return
			}
		}
		s.answer(w, rec, req, tokens(string(body)))
	}
}

// parseAnthropic decodes body into req and flattens it into rec.
func parseAnthropic(body []byte, req *anthropicRequest, rec *Request) error {
	if len(body) == 0 {
		return errors.New("empty request body")
	}
	if err := json.Unmarshal(body, req); err != nil {
		return fmt.Errorf("decode request: %w", err)
	}
	rec.Model, rec.Stream = req.Model, req.Stream
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	system, err := anthropicBlocks(req.System)
	if err != nil {
		return fmt.Errorf("decode system: %w", err)
	}
	var texts []string
	for _, b := range system {
		texts = append(texts, b.Text)
	}
	rec.System = strings.Join(texts, "\n")
	for i, m := range req.Messages {
		blocks, err := anthropicBlocks(m.Content)
		if err != nil {
			return fmt.Errorf("decode message %d: %w", i, err)
		}
		msg, err := flattenAnthropic(m.Role, blocks)
		if err != nil {
			return fmt.Errorf("decode message %d: %w", i, err)
		}
		rec.Messages = append(rec.Messages, msg)
	}
	return nil
}

// anthropicBlocks decodes content that is either a string or a list of
// blocks.
func anthropicBlocks(raw json.RawMessage) ([]anthropicBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	return blocks, nil
}

// flattenAnthropic turns one message's blocks into a Message.
func flattenAnthropic(role string, blocks []anthropicBlock) (Message, error) {
	m := Message{Role: role}
	var texts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use":
			m.ToolUses = append(m.ToolUses, b.Name)
		case "tool_result":
			inner, err := anthropicBlocks(b.Content)
			if err != nil {
				return Message{}, fmt.Errorf("tool_result content: %w", err)
			}
			var out []string
			for _, ib := range inner {
				if ib.Type == "text" {
					out = append(out, ib.Text)
				}
			}
			m.ToolResults = append(m.ToolResults, strings.Join(out, "\n"))
		}
	}
	m.Text = strings.Join(texts, "\n")
	return m, nil
}

// anthropicError writes an error in the Messages API's error shape.
func anthropicError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error",
		"error": map[string]string{"type": "invalid_request_error", "message": msg}})
}

// writeJSON writes v as a 200 JSON answer.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
