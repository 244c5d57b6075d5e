package hostagent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
)

// SystemPrompt is what the model is told of its situation.
const SystemPrompt = `You are a coding agent working in a sandbox on a project checked out at /workspace (a git repository).
Your tools act inside that sandbox: run_command runs shell commands there, the file tools read and change files beneath /workspace.
Work on your own until the task is done: read the code, make the change, run the tests, and fix what fails.
Commit your work with git when it is done, then answer with a short summary of what you changed and how you checked it.
Files you want kept that do not belong in the repository go in /workspace/deliverables.`

// Events receives what the loop does, in order, from the loop's goroutine.
type Events interface {
	// Text is assistant text as it streams.
	Text(s string)
	// Retry says a model call failed and will be tried again after wait.
	Retry(err error, wait time.Duration, attempt int)
	// Turn is an assistant message, complete, with what it cost.
	Turn(msg Message, u Usage, took time.Duration)
	// ToolStart, Output and ToolEnd follow one tool call.
	ToolStart(call Block)
	Output(call Block, chunk string)
	ToolEnd(call Block, r Result, took time.Duration)
	// Save is the whole conversation after each change to it, to keep.
	Save(conv []Message)
}

// Budget is wire.RunBudget (the API's wire type).
type Budget = wire.RunBudget

// BudgetError stops a prompt that used its budget.
type BudgetError struct {
	What  string // "turns" or "tokens"
	Limit int64
	Used  int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("the run used its budget of %d %s (%d used)", e.Limit, e.What, e.Used)
}

// Retry is how the loop tries a failed model call again: up to Attempts calls in all,
// waiting Base, then twice as long each time up to Max, or what the server asked.
type Retry struct {
	Attempts  int
	Base, Max time.Duration
}

// DefaultRetry waits 1s, 2s, 4s, 8s, 16s: six attempts over about half a minute.
var DefaultRetry = Retry{Attempts: 6, Base: time.Second, Max: 30 * time.Second}

// Loop runs prompts: model turn, tool calls, model turn, ... until the model answers
// without calling a tool.
type Loop struct {
	Model  Model
	Tools  *Tools
	System string
	// MaxOutput is each turn's max_tokens (8192 when zero).
	MaxOutput int64
	// ContextTokens is the conversation size beyond which old tool output is compacted
	// out of what the model is sent (150000 when zero).
	ContextTokens int64
	Budget        Budget
	Retry         Retry
	Events        Events
}

// Run adds prompt to the conversation and works until the model is done, the budget is
// spent (a *BudgetError), ctx is cancelled (its error) or the model fails. It returns the
// conversation as it then stands, always valid to continue (every tool call answered).
func (l *Loop) Run(ctx context.Context, conv []Message, prompt string) ([]Message, error) {
	conv = addPrompt(Repair(conv), prompt)
	l.Events.Save(conv)
	var turns int
	var used int64
	for {
		if l.Budget.MaxTurns > 0 && turns >= l.Budget.MaxTurns {
			return conv, &BudgetError{What: "turns", Limit: int64(l.Budget.MaxTurns), Used: int64(turns)}
		}
		if l.Budget.MaxTokens > 0 && used >= l.Budget.MaxTokens {
			return conv, &BudgetError{What: "tokens", Limit: l.Budget.MaxTokens, Used: used}
		}
		start := time.Now()
		msg, u, err := l.turn(ctx, conv)
		if err != nil {
			return conv, err
		}
		turns++
		used += u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
		conv = append(conv, msg)
		l.Events.Turn(msg, u, time.Since(start))
		l.Events.Save(conv)
		calls := msg.ToolUses()
		if len(calls) == 0 {
			return conv, nil
		}
		results := Message{Role: "user"}
		for i, call := range calls {
			l.Events.ToolStart(call)
			start := time.Now()
			r, err := l.Tools.Call(ctx, call.Name, call.Input, func(chunk string) { l.Events.Output(call, chunk) })
			if err != nil {
				// Cancelled, or the sandbox went away: every call left gets a result saying so.
				why := fmt.Sprintf("%s did not finish: %v", call.Name, err)
				if ctx.Err() != nil {
					why = fmt.Sprintf("%s was cancelled by the user", call.Name)
				}
				for _, c := range calls[i:] {
					r := fail("%s", why)
					if c.ID != call.ID {
						r = fail("%s was not run: the run stopped before it", c.Name)
					}
					results.Content = append(results.Content, resultBlock(c, r))
					l.Events.ToolEnd(c, r, time.Since(start))
				}
				conv = append(conv, results)
				l.Events.Save(conv)
				return conv, err
			}
			results.Content = append(results.Content, resultBlock(call, r))
			l.Events.ToolEnd(call, r, time.Since(start))
		}
		conv = append(conv, results)
		l.Events.Save(conv)
	}
}

func resultBlock(call Block, r Result) Block {
	return Block{Type: BlockToolResult, ToolUseID: call.ID, Text: r.Text, IsError: r.IsError}
}

// addPrompt appends the user's prompt: a message of its own, or beside the tool results
// that end the conversation (a model call takes no two user messages in a row).
func addPrompt(conv []Message, prompt string) []Message {
	b := Block{Type: BlockText, Text: prompt}
	if n := len(conv); n > 0 && conv[n-1].Role == "user" {
		last := conv[n-1]
		content := append(append([]Block(nil), last.Content...), b)
		return append(conv[:n-1:n-1], Message{Role: "user", Content: content})
	}
	return append(conv, Message{Role: "user", Content: []Block{b}})
}

// turn makes one model call, trying again as Retry says.
func (l *Loop) turn(ctx context.Context, conv []Message) (Message, Usage, error) {
	retry := l.Retry
	if retry.Attempts == 0 {
		retry = DefaultRetry
	}
	maxOut, ctxTokens := l.MaxOutput, l.ContextTokens
	if maxOut == 0 {
		maxOut = 8192
	}
	if ctxTokens == 0 {
		ctxTokens = 150_000
	}
	req := TurnRequest{System: l.System, Tools: Definitions, Messages: compact(conv, ctxTokens, 4), MaxTokens: maxOut}
	wait := retry.Base
	for attempt := 1; ; attempt++ {
		msg, u, err := l.Model.Turn(ctx, req, l.Events.Text)
		var re *RetryError
		if err == nil || !errors.As(err, &re) || attempt >= retry.Attempts {
			if err != nil && re != nil {
				err = fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
			}
			return msg, u, err
		}
		w := wait
		if re.After > 0 {
			w = re.After
		}
		w = min(w, retry.Max)
		l.Events.Retry(err, w, attempt)
		select {
		case <-ctx.Done():
			return Message{}, Usage{}, ctx.Err()
		case <-time.After(w):
		}
		wait = min(wait*2, retry.Max)
	}
}
