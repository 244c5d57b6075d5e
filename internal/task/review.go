package task

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// Review sends a comment to an attempt's agent as its next message, optionally about a
// file (and line) of its diff, and records it; the attempt is at work again, and the end
// of that turn runs its checks again and ranks it anew. The file is only named to the
// agent, never opened on the host.
func (s *Service) Review(ctx context.Context, name string, n int, req wire.ReviewRequest) (wire.Attempt, error) {
	msg := strings.TrimSpace(req.Message)
	if msg == "" {
		return wire.Attempt{}, apperr.Invalid("say what the agent should change", "a review needs a message")
	}
	file := req.File
	if file != "" {
		clean := path.Clean(file)
		if path.IsAbs(file) || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsAny(file, "\x00\n\r") {
			return wire.Attempt{}, apperr.Invalid("name the file as its diff does, relative to the repository's top (e.g. src/main.go)",
				"%q is not a file of the repository", file)
		}
		file = clean
	}
	if req.Line < 0 || (req.Line > 0 && file == "") {
		return wire.Attempt{}, apperr.Invalid("give --line with --file, a line number from 1", "line %d of no file", req.Line)
	}
	t, err := s.Get(ctx, name)
	if err != nil {
		return wire.Attempt{}, err
	}
	a := attemptOf(&t, n)
	if a == nil {
		return wire.Attempt{}, apperr.NotFound(fmt.Sprintf("`paddock task show %s` lists its attempts", name), "task %s has no attempt %d", name, n)
	}
	switch a.State {
	case wire.AttemptStarting:
		return wire.Attempt{}, apperr.Conflict("wait for it to start", "attempt %d of task %s is still starting", n, name)
	case wire.AttemptFailed:
		return wire.Attempt{}, apperr.Conflict(fmt.Sprintf("`paddock task show %s` says why", name), "attempt %d of task %s could not start", n, name)
	case wire.AttemptLanded:
		return wire.Attempt{}, apperr.Conflict("start a new task for further work", "attempt %d of task %s has landed", n, name)
	}
	// Working before the message goes: a turn that ends at once is this one's end, not
	// lost to a record made after it.
	review := wire.Review{File: file, Line: req.Line, Message: msg, At: s.opts.Now()}
	var was wire.Attempt
	var wasTask string
	t, err = s.updateAttempt(ctx, name, n, func(t *wire.Task, a *wire.Attempt) error {
		was, wasTask = *a, t.State
		a.Reviews = append(a.Reviews, review)
		a.State, a.Ended = wire.AttemptWorking, time.Time{}
		if t.State == wire.TaskDone {
			t.State = wire.TaskRunning
		}
		return nil
	})
	if err != nil {
		return wire.Attempt{}, err
	}
	if err := s.opts.Sessions.SendTurn(ctx, a.Sandbox, a.Session, reviewText(file, req.Line, msg)); err != nil {
		s.updateAttempt(context.WithoutCancel(ctx), name, n, func(t *wire.Task, a *wire.Attempt) error {
			if len(a.Reviews) > 0 && a.Reviews[len(a.Reviews)-1] == review {
				a.Reviews = a.Reviews[:len(a.Reviews)-1]
			}
			if a.State == wire.AttemptWorking {
				a.State, a.Ended = was.State, was.Ended
				if t.State == wire.TaskRunning && wasTask == wire.TaskDone {
					t.State = wire.TaskDone
				}
			}
			return nil
		})
		return wire.Attempt{}, err
	}
	return *attemptOf(&t, n), nil
}

// reviewText is the message a review sends to an attempt's agent.
func reviewText(file string, line int, msg string) string {
	switch {
	case file != "" && line > 0:
		return fmt.Sprintf("Review of your work on %s line %d: %s", file, line, msg)
	case file != "":
		return fmt.Sprintf("Review of your work on %s: %s", file, msg)
	}
	return "Review of your work: " + msg
}
