package modeltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Gemini is a scripted Gemini API server: POST /v1beta/models/MODEL:generateContent
// and :streamGenerateContent?alt=sse (Server-Sent Events), and :countTokens. It records
// every request, including ones to paths it does not serve (answered 404).
//
// The Gemini CLI, given GOOGLE_GEMINI_BASE_URL = URL() and an API key, was seen
// streaming with the key in x-goog-api-key; a functionCall part named
// run_shell_command with {"command": ...} makes it run a command, and its next request
// carries a functionResponse part. A request that asks for JSON (a
// responseMimeType of application/json: the CLI's next-speaker check) is answered
// {"reasoning": ..., "next_speaker": "user"}.
type Gemini struct {
	srv     *httptest.Server
	log     log
	failing atomic.Int32 // an HTTP status every model call is answered with, or 0
}

// SetFailing makes the server answer every model call with HTTP status and an
// INVALID_ARGUMENT error, until SetFailing(0).
func (s *Gemini) SetFailing(status int) { s.failing.Store(int32(status)) }

// GeminiCached is the cachedContentTokenCount of every usage the Gemini server
// reports (counted in its promptTokenCount, as Gemini's are).
const GeminiCached = 32

// NewGemini starts a scripted Gemini API server on 127.0.0.1, closed when the test ends.
func NewGemini(tb testing.TB) *Gemini {
	tb.Helper()
	s := &Gemini{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the server's base URL (GOOGLE_GEMINI_BASE_URL).
func (s *Gemini) URL() string { return s.srv.URL }

// Requests returns a copy of the requests received, in arrival order.
func (s *Gemini) Requests() []Request { return s.log.all() }

// Key returns the API key of the last request.
func (s *Gemini) Key() string { return s.log.key() }

type geminiPart struct {
	Text         string `json:"text,omitempty"`
	FunctionCall *struct {
		Name string         `json:"name"`
		Args map[string]any `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

type geminiRequest struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []geminiPart `json:"parts"`
	} `json:"systemInstruction"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType string `json:"responseMimeType"`
	} `json:"generationConfig"`
}

func (s *Gemini) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	rec := Request{Path: r.URL.Path, APIKey: key, Header: r.Header.Clone(), Body: body}
	model, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	rec.Model = model
	var req geminiRequest
	parseErr := parseGemini(body, &req, &rec)
	rec.Stream = method == "streamGenerateContent"
	s.log.add(rec)
	switch {
	case r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/"):
		geminiError(w, http.StatusNotFound, fmt.Sprintf("modeltest: no route for %s %s", r.Method, r.URL.Path))
	case parseErr != nil:
		geminiError(w, http.StatusBadRequest, parseErr.Error())
	case method == "countTokens":
		writeJSONBody(w, map[string]any{"totalTokens": len(body) / 4})
	case s.failing.Load() != 0:
		geminiError(w, int(s.failing.Load()), "modeltest: scripted failure")
	case method == "generateContent" || method == "streamGenerateContent":
		s.answer(w, rec, req, method == "streamGenerateContent")
	default:
		geminiError(w, http.StatusNotFound, "modeltest: no method "+method)
	}
}

// parseGemini decodes body into req and flattens it into rec: model turns become
// assistant messages, functionResponse parts user messages carrying ToolResults.
func parseGemini(body []byte, req *geminiRequest, rec *Request) error {
	if len(body) == 0 {
		return errors.New("empty request body")
	}
	if err := json.Unmarshal(body, req); err != nil {
		return fmt.Errorf("decode request: %w", err)
	}
	if req.SystemInstruction != nil {
		var texts []string
		for _, p := range req.SystemInstruction.Parts {
			texts = append(texts, p.Text)
		}
		rec.System = strings.Join(texts, "\n")
	}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			rec.Tools = append(rec.Tools, f.Name)
		}
	}
	for _, c := range req.Contents {
		role := "user"
		if c.Role == "model" {
			role = "assistant"
		}
		var m Message
		m.Role = role
		var texts []string
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				m.ToolUses = append(m.ToolUses, p.FunctionCall.Name)
			case p.FunctionResponse != nil:
				m.ToolResults = append(m.ToolResults, string(p.FunctionResponse.Response))
			case p.Text != "":
				texts = append(texts, p.Text)
			}
		}
		m.Text = strings.Join(texts, "\n")
		rec.Messages = append(rec.Messages, m)
	}
	return nil
}

func (s *Gemini) answer(w http.ResponseWriter, rec Request, req geminiRequest, stream bool) {
	var parts []map[string]any
	switch {
	case req.GenerationConfig.ResponseMimeType == "application/json":
		parts = []map[string]any{{"text": `{"reasoning":"the answer is complete","next_speaker":"user"}`}}
	case len(rec.Tools) == 0:
		parts = []map[string]any{{"text": SideReply}}
	default:
		t := decide(lastTurn(rec.Messages))
		parts = []map[string]any{{"text": t.text}}
		switch t.call {
		case callRun:
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{"command": t.arg}}})
		case callWrite:
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": "write_file",
				"args": map[string]any{"file_path": t.arg, "content": WriteContent}}})
		}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": len(rec.Body)/4 + GeminiCached, "candidatesTokenCount": 8,
			"cachedContentTokenCount": GeminiCached, "totalTokenCount": len(rec.Body)/4 + GeminiCached + 8},
		"modelVersion": rec.Model,
	}
	if !stream {
		writeJSONBody(w, resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	data, _ := json.Marshal(resp)
	fmt.Fprintf(w, "data: %s\r\n\r\n", data)
}

func writeJSONBody(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func geminiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": "INVALID_ARGUMENT"}})
}
