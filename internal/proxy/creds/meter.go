package creds

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Meter is told about every request a sandbox makes to a model provider through the
// proxy: it may refuse one before it goes (a budget is spent), and hears what each
// model call's answer (or any answer reporting usage) reported once its body has passed. Both are called from the request's goroutine, so they must
// be quick; Record must not wait on a disk.
type Meter interface {
	// Admit returns a refusal to answer the call with instead of forwarding it, or nil.
	Admit(ctx context.Context, c Call) *Refusal
	// Record is called once per admitted model call, or other request whose answer
	// reported usage, when its answer ended (or was cut short).
	Record(c Call, a Answer)
}

// Call is one model call of a sandbox.
type Call struct {
	// SandboxID and Sandbox name the sandbox whose proxy handler served the call: known,
	// not claimed by the sandbox.
	SandboxID, Sandbox string
	// Session is paddock's session the call says it comes from (the X-Paddock-Session
	// header its agent sends), and AgentSession the agent's own conversation id (Claude
	// Code's X-Claude-Code-Session-Id, Codex's Session-Id). Anything inside the sandbox
	// could claim either: they attribute, they do not authenticate.
	Session, AgentSession string
	Provider              string
	// Start is when the request came; Duration, once recorded, how long until the
	// answer's end.
	Start    time.Time
	Duration time.Duration
}

// Refusal is a call the meter will not let through: the message goes to the agent in
// its provider's own error shape, so the agent's CLI shows it.
type Refusal struct {
	Message string
}

// SessionHeader is the header an agent sends to say which of paddock's sessions it
// runs in. The proxy reads it and does not pass it on.
const SessionHeader = "X-Paddock-Session"

// agentSessionHeaders carry agent CLIs' conversation ids, as they send them.
var agentSessionHeaders = []string{"X-Claude-Code-Session-Id", "Session-Id"}

func agentSession(h http.Header) string {
	for _, name := range agentSessionHeaders {
		if v := h.Get(name); v != "" && len(v) <= 128 {
			return v
		}
	}
	return ""
}

// modelCall says whether a request to a provider speaking wire is a model call, which
// the proxy always records: the calls that answer with tokens used.
func modelCall(wire, method, rest string) bool {
	if method != http.MethodPost {
		return false
	}
	switch wire {
	case WireAnthropic:
		return rest == "/v1/messages"
	case WireOpenAI:
		return strings.HasSuffix(rest, "/responses") || strings.HasSuffix(rest, "/chat/completions") ||
			strings.HasSuffix(rest, "/completions")
	case WireGemini:
		return strings.Contains(rest, ":generateContent") || strings.Contains(rest, ":streamGenerateContent")
	}
	return false
}

// geminiModel is the model a Gemini call names in its path (models/NAME:method).
func geminiModel(rest string) string {
	_, after, ok := strings.Cut(rest, "/models/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(after, ":")
	return name
}

// refuse answers a call with the provider's own error shape. The status is 400, which
// agents show and do not retry (they retry 429 and 5xx, which would only repeat it).
func refuse(w http.ResponseWriter, wire, msg string) int {
	var body any
	switch wire {
	case WireAnthropic:
		body = map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": msg}}
	case WireGemini:
		body = map[string]any{"error": map[string]any{"code": http.StatusBadRequest, "message": msg, "status": "FAILED_PRECONDITION"}}
	default:
		body = map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": "budget_spent"}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(body)
	return http.StatusBadRequest
}
