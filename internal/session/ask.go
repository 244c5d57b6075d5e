package session

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/transcript"
)

// How long Ask waits: for a session it brought back (or one still starting) to be at
// its prompt, for the turn to end, and then for the transcript to hold the answer (an
// agent may write it a moment after its hook has run).
const (
	readyWait  = 2 * time.Minute
	turnWait   = 30 * time.Minute
	answerWait = 15 * time.Second
	// lookEvery is how often, while the turn runs, Ask reads the transcript: a turn that
	// failed is seen there, as not every agent's hooks report it (Codex runs none).
	lookEvery = 3 * time.Second
	// lostWait is how long a typed message may go without showing in the transcript.
	lostWait = 90 * time.Second
)

// maxAnswer is the most of an agent's print-mode output Ask reads.
const maxAnswer = 64 << 20

// Ask sends one message to a session's conversation and returns the agent's final
// answer of that turn. The message is typed into the session's agent at its prompt, as
// a person would, so that the conversation the session shows and continues (and its
// transcript) holds it, and the answer is read from the transcript once the agent's
// hook reports the turn over. A session whose process exited is brought back first,
// resuming its conversation; one still starting is waited for; a busy one (working), or
// one whose agent waits for an answer to its own question (waiting), is refused at
// once. A turn the agent ends with an error (its model's API failing) is an error. An
// agent whose hooks do not tell a turn's end (goose, Aider) is asked through its print
// mode instead, on its saved conversation, and only while its session's process is not
// running: a running one would not see that exchange.
func (s *Service) Ask(ctx context.Context, sandboxName, name, text string) (string, error) {
	t, err := s.resolve(ctx, sandboxName, name)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(text) == "" {
		return "", apperr.Invalid("", "the message is empty")
	}
	l, err := readLive(ctx, t.client, name)
	if err != nil {
		return "", err
	}
	st, _ := statusOf(l, name)
	if t.agent.Parse == nil || !t.agent.Status.Idle {
		return s.askPrintMode(ctx, t, st, text)
	}
	switch st {
	case "working":
		return "", apperr.Conflict(fmt.Sprintf("wait for its turn to end (`paddock chat %s --list` shows it idle), or watch it with `paddock chat %s/%s`", sandboxName, sandboxName, name),
			"session %q is busy: its agent is working", name)
	case "waiting":
		// Its agent waits for an answer to its own question (a permission, a choice), which
		// a message pasted there would take as one.
		return "", apperr.Conflict(fmt.Sprintf("answer it with `paddock chat %s/%s`", sandboxName, name),
			"session %q waits for your answer to its agent's question", name)
	case "exited":
		if _, err := s.Restart(ctx, sandboxName, name); err != nil {
			return "", fmt.Errorf("bring back session %q: %w", name, err)
		}
		fallthrough
	case "starting":
		if st = s.waitStatus(ctx, t, readyWait, func(st string) bool { return st != "starting" }); st == "starting" || st == "exited" || st == "error" {
			return "", apperr.Unavailable(fmt.Sprintf("see its screen with `paddock chat %s/%s`", sandboxName, name),
				"session %q is not at its prompt (%s after %v)", name, st, readyWait)
		}
	}
	return s.askThroughSession(ctx, t, text)
}

// askThroughSession types text into the running session, waits for the turn to end,
// and reads the answer from the transcript.
func (s *Service) askThroughSession(ctx context.Context, t *target, text string) (string, error) {
	name, sandboxName := t.se.Name, t.sb.Name
	before, _, err := s.readTranscript(ctx, t.client, t.sb, t.se, false)
	if err != nil {
		return "", err
	}
	from := len(before) // the turn's entries come after these
	// Busy from now: a second ask is refused, and the wait below waits for the hook that
	// ends the turn (an agent with no hook at the turn's start, Codex, reports none).
	if err := s.startTurn(ctx, t, text, readyWait); err != nil {
		return "", err
	}
	var turn []transcript.Entry
	failed, lost := false, false
	sent, last := time.Now(), time.Now()
	st := s.waitStatus(ctx, t, turnWait, func(st string) bool {
		if st != "working" {
			return true
		}
		if time.Since(last) < lookEvery {
			return false
		}
		last = time.Now()
		var located bool
		turn, located = s.turnOf(ctx, t, from, text)
		failed = len(turn) > 0 && turn[len(turn)-1].Kind == transcript.KindError
		// A message the agent never took (typed while it was still drawing its screen)
		// shows in no transcript: the turn will not end.
		lost = located && turn == nil && time.Since(sent) > lostWait
		return failed || lost
	})
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case lost:
		setStatus(context.WithoutCancel(ctx), t.client, name, "idle")
		return "", fmt.Errorf("session %q shows no sign of the message %v after it was typed: see its screen with `paddock chat %s/%s`", name, lostWait, sandboxName, name)
	case st == "exited":
		return "", fmt.Errorf("session %q exited before answering: see its screen with `paddock chat %s/%s`", name, sandboxName, name)
	case st == "waiting":
		return "", apperr.Conflict(fmt.Sprintf("answer it with `paddock chat %s/%s`", sandboxName, name),
			"session %q stopped its turn to ask you something", name)
	case st == "working" && !failed:
		return "", fmt.Errorf("session %q is still working after %v: watch it with `paddock chat %s/%s`", name, turnWait, sandboxName, name)
	case failed:
		// The agent is back at its prompt, though no hook said so.
		setStatus(ctx, t.client, name, "idle")
	}
	// The hook may run before the transcript has the answer: read it until the turn's
	// last entry is the answer (not a tool call whose answer is still to come).
	for deadline := time.Now().Add(answerWait); ; time.Sleep(200 * time.Millisecond) {
		if turn, _ = s.turnOf(ctx, t, from, text); len(turn) > 0 {
			switch e := turn[len(turn)-1]; e.Kind {
			case transcript.KindAssistant:
				return e.Text, nil
			case transcript.KindError:
				return "", fmt.Errorf("%s's turn failed: %s (its transcript: `paddock transcript %s/%s`)", t.agent.Name, e.Text, sandboxName, name)
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("session %q answered nothing paddock could read in its transcript: see it with `paddock chat %s/%s`", name, sandboxName, name)
		}
	}
}

// turnOf is the turn of the message text in the session's transcript: its entries from
// the user's message on, looked for after the first from entries (what the transcript
// held before the message was sent); nil when the transcript does not show it yet.
// located is false when the transcript cannot be read (yet).
func (s *Service) turnOf(ctx context.Context, t *target, from int, text string) (turn []transcript.Entry, located bool) {
	// The turn's end may have taught paddock the conversation's id (Codex reports it
	// then), which names the transcript.
	if se, err := s.store.GetSession(ctx, t.sb.ID, t.se.Name); err == nil {
		t.se = se
	}
	entries, ok, err := s.readTranscript(ctx, t.client, t.sb, t.se, false)
	if err != nil || !ok {
		return nil, false
	}
	if from > len(entries) {
		from = 0 // the agent wrote its transcript anew
	}
	return turnAfter(entries[from:], text), true
}

// turnAfter is the entries from the user message holding text on (the last such; the
// first user message when none holds it, as an agent may have reshaped a long text).
func turnAfter(entries []transcript.Entry, text string) []transcript.Entry {
	want, at := strings.TrimSpace(text), -1
	for i, e := range entries {
		if e.Kind != transcript.KindUser {
			continue
		}
		if strings.Contains(e.Text, want) || at < 0 {
			at = i
		}
	}
	if at < 0 {
		return nil
	}
	return entries[at:]
}

// startTurn types text into the session as a turn of its conversation. An agent whose
// hook ends its turns is marked working from now (its own hook at the turn's start may
// come late, or never: Codex has none), and idle again if the text could not be sent;
// one whose hooks do not say it is at its prompt is first given up to wait to settle.
func (s *Service) startTurn(ctx context.Context, t *target, text string, wait time.Duration) error {
	name := t.se.Name
	if t.agent.Status.Idle {
		if err := setStatus(ctx, t.client, name, "working"); err != nil {
			return err
		}
	}
	if !t.agent.Status.Ready {
		settled(ctx, t.client, name, wait)
	}
	if err := s.send(ctx, t, text, 0); err != nil {
		if t.agent.Status.Idle {
			setStatus(context.WithoutCancel(ctx), t.client, name, "idle")
		}
		return err
	}
	return nil
}

// setStatus writes a session's status file, as its agent's hooks do.
func setStatus(ctx context.Context, c *guestclient.Client, name, status string) error {
	if _, code, err := run(ctx, c, "sh", "-c", `printf '{"status":"%s"}' "$3" > "$1/$2.json"`, "sh", StatusDir, name, status); err != nil || code != 0 {
		return fmt.Errorf("mark session %q %s: exit %d: %v", name, status, code, err)
	}
	return nil
}

// askPrintMode asks an agent whose hooks do not tell a turn's end through its print
// mode, which continues its saved conversation: only while the session's process is not
// running, as the running one would not see the exchange.
func (s *Service) askPrintMode(ctx context.Context, t *target, status, text string) (string, error) {
	name, sandboxName := t.se.Name, t.sb.Name
	hint := fmt.Sprintf("type it into the session with `paddock chat %s/%s -m TEXT` and watch it with `paddock chat %s/%s`", sandboxName, name, sandboxName, name)
	switch {
	case t.agent.Ask == nil:
		return "", apperr.Invalid(hint, "agent %s has no non-interactive mode", t.agent.Name)
	case status != "exited":
		return "", apperr.Conflict(hint, "agent %s does not tell paddock when a turn ends, so its answer cannot be read from its running session %q", t.agent.Name, name)
	}
	sess := t.session()
	sess.Fresh = s.fresh(ctx, t, sess)
	argv := t.agent.AskArgv(sess, text)
	env := append([]string{"PADDOCK_SESSION=" + name}, t.env()...)
	var stdin io.Reader
	if t.agent.AskOnStdin {
		stdin = strings.NewReader(text)
	}
	// The answer is the agent's print mode's output (its JSON included): large for a long
	// turn, but bounded, as the sandbox's program chooses how much it prints.
	stdout, stderr, code, err := t.client.Output(ctx, guestclient.ExecOptions{Argv: argv, Env: env, Dir: sess.Dir, Stdin: stdin}, maxAnswer)
	if err != nil {
		return "", fmt.Errorf("%s's answer: %w", t.agent.Name, err)
	}
	answer, resumeID, aerr := t.agent.Answer([]byte(stdout))
	if aerr != nil {
		return "", fmt.Errorf("%s exited %d: %v %s", t.agent.Name, code, aerr, strings.TrimSpace(tailOf(stderr)))
	}
	if resumeID != "" && resumeID != t.se.ResumeID {
		// The agent continued the conversation under a new id: follow it, so that a
		// restart resumes what was said here too.
		s.store.SetResumeID(ctx, t.sb.ID, name, resumeID)
	}
	return answer, nil
}
