package wire

import (
	"encoding/json"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire/tokens"
)

// The statuses of a run (Run.Status).
const (
	RunRunning     = "running"
	RunDone        = "done"
	RunFailed      = "failed"
	RunCancelled   = "cancelled"
	RunStopped     = "stopped" // by its budget
	RunInterrupted = "interrupted"
)

// Run is one run of the host-side agent: a conversation with a model whose tools act in
// a sandbox.
type Run struct {
	ID string `json:"id"`
	// SandboxID is the daemon's own key of the sandbox, never sent.
	SandboxID string    `json:"-"`
	Sandbox   string    `json:"sandbox"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	Title     string    `json:"title"`
	Status    string    `json:"status"`
	Error     string    `json:"error,omitempty"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
	Usage
	// Conversation is the messages as JSON, to resume the run; the daemon keeps it and
	// never sends it.
	Conversation string `json:"-"`
}

// Usage is what a run or a step spent: its model turns and tool calls, and the tokens
// as transcripts count them.
type Usage struct {
	Turns     int `json:"turns,omitempty"`
	ToolCalls int `json:"tool_calls,omitempty"`
	tokens.Usage
}

// Add adds u to the totals.
func (t *Usage) Add(u Usage) {
	t.Turns += u.Turns
	t.ToolCalls += u.ToolCalls
	t.Usage.Add(u.Usage)
}

// RunStep is one step of a run.
type RunStep struct {
	Seq      int           `json:"seq"`
	Kind     string        `json:"kind"` // prompt, turn, tool
	Name     string        `json:"name,omitempty"`
	Input    string        `json:"input,omitempty"`
	Output   string        `json:"output,omitempty"`
	IsError  bool          `json:"is_error,omitempty"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	Usage
}

// RunEvent is one thing a run does, as the API streams it to the run's follower.
type RunEvent struct {
	// Type is started, text, retry, tool, output, tool-done, turn or finished.
	Type string `json:"type"`
	Run  *Run   `json:"run,omitempty"`
	Text string `json:"text,omitempty"`
	// Tool, ID and Input name a tool call (tool, output, tool-done).
	Tool     string          `json:"tool,omitempty"`
	ID       string          `json:"id,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
	IsError  bool            `json:"is_error,omitempty"`
	Duration time.Duration   `json:"duration_ns,omitempty"`
	Usage    *Usage          `json:"usage,omitempty"`
}

// RunLine is one line of a run's NDJSON stream; the last is a "finished" event, or an
// error.
type RunLine struct {
	RunEvent
	Error *ErrorBody `json:"error,omitempty"`
}

// RunBudget bounds one prompt's work; zero means no bound.
type RunBudget struct {
	// MaxTurns is how many model calls the prompt may make.
	MaxTurns int `json:"max_turns,omitempty"`
	// MaxTokens is how many tokens its model calls may use: input (cached or not) and output.
	MaxTokens int64 `json:"max_tokens,omitempty"`
}

// RunRequest starts a run or continues one: the body of POST /v1/sandboxes/{name}/runs
// and POST /v1/runs/{id}/messages.
type RunRequest struct {
	Prompt string `json:"prompt"`
	// Model overrides [run] model.
	Model string `json:"model,omitempty"`
	RunBudget
}

// RunDetail is what GET /v1/runs/{id} answers: the run and each of its steps.
type RunDetail struct {
	Run
	Steps []RunStep `json:"steps"`
}
