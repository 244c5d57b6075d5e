package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// A planned call is a line "CALL: <tool> <JSON input>" of the user's latest text: the
// server makes such calls one per turn, in order, whatever the tools' results, then
// answers "DONE: " with the last result. This scripts the multi-turn tool use of a loop
// that offers its own tools (paddock's host-side agent).
type plannedCall struct {
	tool  string
	input map[string]any
}

// nextPlanned returns the next planned call of a request: the calls of the last user
// message with text, less those the assistant made since. ok is false when that message
// plans none, or all are made.
func nextPlanned(msgs []Message) (call plannedCall, step int, ok bool, err error) {
	from := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && strings.TrimSpace(userText(msgs[i].Text)) != "" {
			from = i
			break
		}
	}
	if from < 0 {
		return plannedCall{}, 0, false, nil
	}
	var plan []plannedCall
	for line := range strings.Lines(userText(msgs[from].Text)) {
		_, rest, found := strings.Cut(line, "CALL: ")
		if !found {
			continue
		}
		tool, raw, _ := strings.Cut(strings.TrimSpace(rest), " ")
		c := plannedCall{tool: tool, input: map[string]any{}}
		if strings.TrimSpace(raw) != "" {
			if err := json.Unmarshal([]byte(raw), &c.input); err != nil {
				return plannedCall{}, 0, false, fmt.Errorf("modeltest: CALL %s: input is not a JSON object: %v", tool, err)
			}
		}
		plan = append(plan, c)
	}
	made := 0
	for _, m := range msgs[from+1:] {
		made += len(m.ToolUses)
	}
	if made >= len(plan) {
		return plannedCall{}, 0, false, nil
	}
	return plan[made], made + 1, true, nil
}

// fault is one request the server answers badly on purpose.
type fault struct {
	status int  // an HTTP error status, or 0
	drop   bool // cut the stream after its first events
}

// Fail makes the server answer the next Messages request with HTTP status (429: a
// rate_limit_error with retry-after headers of a few milliseconds; 529: overloaded_error;
// others: api_error). Calls queue: Fail(429); Fail(429) fails the next two.
func (s *Anthropic) Fail(status int) { s.queue(fault{status: status}) }

// ClearFaults forgets the faults Fail and Drop queued that no request has taken yet (a
// client that gave up retrying left them).
func (s *Anthropic) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Drop makes the server cut the next streamed answer short: it sends message_start and
// part of the text, then closes the connection without message_stop.
func (s *Anthropic) Drop() { s.queue(fault{drop: true}) }

// SetDelay makes the server wait d before each Messages answer, as a model takes time.
func (s *Anthropic) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

func (s *Anthropic) queue(f fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// takeFault returns the next queued fault, if any.
func (s *Anthropic) takeFault() (fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) == 0 {
		return fault{}, false
	}
	f := s.faults[0]
	s.faults = s.faults[1:]
	return f, true
}

// failAnswer writes a fault's error answer.
func failAnswer(w http.ResponseWriter, status int) {
	kind := "api_error"
	switch status {
	case http.StatusTooManyRequests:
		kind = "rate_limit_error"
		w.Header().Set("Retry-After-Ms", "20")
		w.Header().Set("Retry-After", "0")
	case 529:
		kind = "overloaded_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error",
		"error": map[string]string{"type": kind, "message": fmt.Sprintf("modeltest: scripted %d", status)}})
}

// dropStream starts a streamed answer and cuts it off.
func dropStream(w http.ResponseWriter, model string) {
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_modeltest_dropped", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "usage": map[string]int64{"input_tokens": 1, "output_tokens": 1}}})
	empty := ""
	sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": anthropicBlockOut{Type: "text", Text: &empty}})
	sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]string{"type": "text_delta", "text": "cut sh"}})
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
		}
	}
}
