package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/hostagent"
	"github.com/paddockhq/paddock/internal/store"
)

// recorder is a run's hostagent.Events: it keeps each step and the conversation in the
// state, and tells the followers and the event bus.
type recorder struct {
	svc  *Service
	live *live
	run  store.Run
	sb   store.Sandbox
}

// ctx is for the writes to the state, which the run's cancellation must not cut short.
func (r *recorder) ctx() context.Context { return context.Background() }

func (r *recorder) step(st store.RunStep) {
	if _, err := r.svc.opts.Store.AddRunStep(r.ctx(), r.run.ID, st); err != nil {
		r.svc.opts.Logger.Error("record a run's step", "run", r.run.ID, "err", err)
	}
}

func (r *recorder) Text(s string) { r.live.publish(Event{Type: "text", Text: s}) }

func (r *recorder) Retry(err error, wait time.Duration, attempt int) {
	r.live.publish(Event{Type: "retry", Text: fmt.Sprintf("%v; trying again in %s (attempt %d)", err, wait.Round(time.Millisecond), attempt+1)})
}

func (r *recorder) Turn(msg hostagent.Message, u hostagent.Usage, took time.Duration) {
	usage := store.Usage{Turns: 1, Usage: u}
	r.run.Add(usage)
	var calls []string
	for _, c := range msg.ToolUses() {
		calls = append(calls, c.Name)
	}
	callsJSON, _ := json.Marshal(calls)
	r.step(store.RunStep{Kind: "turn", Input: string(callsJSON), Output: msg.Text(), Started: time.Now().Add(-took), Duration: took, Usage: usage})
	r.live.publish(Event{Type: "turn", Usage: &usage, Duration: took})
}

func (r *recorder) ToolStart(call hostagent.Block) {
	r.live.publish(Event{Type: "tool", Tool: call.Name, ID: call.ID, Input: call.Input})
}

func (r *recorder) Output(call hostagent.Block, chunk string) {
	r.live.publish(Event{Type: "output", Tool: call.Name, ID: call.ID, Text: chunk})
}

func (r *recorder) ToolEnd(call hostagent.Block, res hostagent.Result, took time.Duration) {
	r.run.ToolCalls++
	r.step(store.RunStep{Kind: "tool", Name: call.Name, Input: string(call.Input), Output: res.Full, IsError: res.IsError,
		Started: time.Now().Add(-took), Duration: took})
	r.svc.opts.Sandboxes.Emit(r.ctx(), r.sb, events.Event{Kind: "run-tool", Detail: fmt.Sprintf("run %s: %s", r.run.ID, call.Name),
		Attrs: map[string]string{"run": r.run.ID, "tool": call.Name, "error": fmt.Sprint(res.IsError), "duration_ms": fmt.Sprint(took.Milliseconds())}})
	r.live.publish(Event{Type: "tool-done", Tool: call.Name, ID: call.ID, Text: res.Text, IsError: res.IsError, Duration: took})
}

func (r *recorder) Save(conv []hostagent.Message) {
	data, err := json.Marshal(conv)
	if err != nil {
		r.svc.opts.Logger.Error("encode a run's conversation", "run", r.run.ID, "err", err)
		return
	}
	r.run.Conversation = string(data)
	if err := r.svc.opts.Store.UpdateRun(r.ctx(), r.run); err != nil {
		r.svc.opts.Logger.Error("record a run's conversation", "run", r.run.ID, "err", err)
	}
}

// finish records how the prompt ended and tells everyone.
func (r *recorder) finish(err error) {
	var be *hostagent.BudgetError
	switch {
	case err == nil:
		r.run.Status, r.run.Error = StatusDone, ""
	case errors.Is(err, context.Canceled) && r.svc.base.Err() != nil:
		r.run.Status = StatusInterrupted
		r.run.Error = fmt.Sprintf("the paddock daemon stopped during the run: `paddock run %s --resume %s \"...\"` goes on", r.run.Sandbox, r.run.ID)
	case errors.Is(err, context.Canceled):
		r.run.Status, r.run.Error = StatusCancelled, "cancelled by the user"
	case errors.As(err, &be):
		r.run.Status = StatusStopped
		r.run.Error = fmt.Sprintf("%v: `paddock run %s --resume %s \"...\"` goes on (--max-%s raises it)", err, r.run.Sandbox, r.run.ID, be.What)
	default:
		r.run.Status, r.run.Error = StatusFailed, err.Error()
	}
	if err := r.svc.opts.Store.UpdateRun(r.ctx(), r.run); err != nil {
		r.svc.opts.Logger.Error("record a run's end", "run", r.run.ID, "err", err)
	}
	detail := fmt.Sprintf("run %s %s", r.run.ID, r.run.Status)
	if r.run.Error != "" {
		detail += ": " + r.run.Error
	}
	r.svc.opts.Sandboxes.Emit(r.ctx(), r.sb, events.Event{Kind: "run-finished", Detail: detail,
		Attrs: map[string]string{"run": r.run.ID, "status": r.run.Status, "error": r.run.Error}})
	run := r.run
	run.Conversation = ""
	r.live.publish(Event{Type: "finished", Run: &run})
}
