package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/limitbuf"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/store"
)

// AttachArgv is the command that attaches a terminal to a session (wire.AttachArgv).
func AttachArgv(name string) []string { return wire.AttachArgv(name) }

// Restart brings back a session whose process exited, resuming its conversation.
func (s *Service) Restart(ctx context.Context, sandboxName, name string) (Info, error) {
	t, err := s.resolve(ctx, sandboxName, name)
	if err != nil {
		return Info{}, err
	}
	l, err := readLive(ctx, t.client, name)
	if err != nil {
		return Info{}, err
	}
	if p, ok := l.panes[name]; ok && !p.dead {
		return Info{}, apperr.Conflict(fmt.Sprintf("attach to it with `paddock chat %s/%s`", sandboxName, name),
			"session %q is still running", name)
	}
	// A dead pane is kept by remain-on-exit: clear it before starting again.
	run(ctx, t.client, "tmux", "-S", Socket, "kill-session", "-t", "="+name)
	sess := t.session()
	// An agent that never got a prompt has no conversation to resume yet.
	sess.Fresh = s.fresh(ctx, t, sess)
	argv := t.agent.ResumeArgv(sess)
	if err := s.launch(ctx, t, argv); err != nil {
		return Info{}, err
	}
	if t.se.Ended {
		if err := s.store.SetSessionEnded(ctx, t.sb.ID, name, false); err != nil {
			s.log.Warn("record a restarted session", "sandbox", sandboxName, "session", name, "err", err)
		}
	}
	s.sandboxes.Emit(ctx, t.sb, events.Event{Kind: "session-restarted", Session: name, Detail: name,
		Attrs: map[string]string{"agent": t.agent.Name}})
	return s.info(ctx, t)
}

// waitTaken waits until the program in a session has taken typed text in: its screen,
// which read before when the text was typed, shows the text's end. A program that shows
// something else (a long paste folded into one line) is given echoWait after its screen
// first changes; one whose screen stays as it was, up to takeWait. An unreadable screen
// ends the wait.
func waitTaken(ctx context.Context, c *guestclient.Client, name, before, text string) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	tail := strings.TrimSpace(lines[len(lines)-1])
	if len(tail) > 20 {
		tail = tail[len(tail)-20:]
	}
	deadline := time.Now().Add(takeWait)
	if before == "" {
		deadline = time.Now().Add(echoWait)
	}
	for ; time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		screen := screenOf(ctx, c, name)
		if screen == "" || strings.Contains(screen, tail) && screen != before {
			return
		}
		if screen != before && time.Until(deadline) > echoWait {
			deadline = time.Now().Add(echoWait)
		}
	}
}

// sendSettle bounds how long Send waits for the screen of an agent without a readiness
// hook to settle before it types.
const sendSettle = 10 * time.Second

// How long Send waits for typed text to show: a program busy when the text came (an
// agent starting, or a slow VM) shows nothing until it reads it, and an Enter pressed
// before then is read with the text as one paste and submits nothing.
const (
	takeWait = 60 * time.Second
	echoWait = 5 * time.Second
)

// fresh reports whether a conversation with a paddock-chosen id has no transcript yet.
func (s *Service) fresh(ctx context.Context, t *target, sess agents.Session) bool {
	tp := t.agent.TranscriptPath(sess)
	if !t.agent.ChoosesID || tp == "" {
		return false // an id learnt from the agent names a conversation that exists
	}
	if strings.ContainsAny(tp, "*?[") {
		return newestMatch(ctx, t.client, tp) == ""
	}
	_, err := t.client.Stat(ctx, "/", tp)
	return errors.Is(err, fs.ErrNotExist)
}

// Send pastes text into a session's prompt and presses Enter, as a person would.
func (s *Service) Send(ctx context.Context, sandboxName, name, text string) error {
	t, err := s.resolve(ctx, sandboxName, name)
	if err != nil {
		return err
	}
	return s.send(ctx, t, text, sendSettle)
}

// send is Send to a resolved session; an agent without a readiness hook is given up to
// settle for its screen to be still first (0: its caller waited for that).
func (s *Service) send(ctx context.Context, t *target, text string, settle time.Duration) error {
	sandboxName, name := t.sb.Name, t.se.Name
	l, err := readLive(ctx, t.client, name)
	if err != nil {
		return err
	}
	st, _ := statusOf(l, name)
	if st == "starting" {
		// Its agent is not at its prompt yet (just started, or brought back): text typed
		// now reaches a program that has not taken the terminal over, which drops it or
		// reads it as something else (seen on a loaded machine with Claude Code, a
		// message sent from the TUI right after the session started). Wait, as a first
		// prompt does.
		st = s.waitStatus(ctx, t, readyWait, func(st string) bool { return st != "starting" })
		if st == "starting" {
			return apperr.Unavailable(fmt.Sprintf("send it again once `paddock ls` shows %s/%s idle", sandboxName, name),
				"session %s/%s: %s was not at its prompt within %v; nothing was sent", sandboxName, name, t.agent.Name, readyWait)
		}
	}
	if st == "exited" {
		return apperr.Conflict(fmt.Sprintf("bring it back with `paddock restart %s/%s`", sandboxName, name), "session %q has exited", name)
	}
	if t.agent.Status.Idle && !t.agent.Status.Ready && settle > 0 {
		// An agent whose hooks do not say it is at its prompt (Codex) may still be
		// drawing its first screen (just started, or brought back by a restart or a
		// rewind): a message pasted then shows in its input and the Enter after it is
		// lost. Its screen still for a moment says it is there (or busy at a turn, whose
		// screen moves: then at most settle).
		settled(ctx, t.client, name, settle)
	}
	text = strings.TrimRight(text, "\n")
	before := screenOf(ctx, t.client, name)
	if err := paste(ctx, t.client, name, closeCompletion(text)); err != nil {
		return err
	}
	// Enter separately, once the program has taken the text in (it shows on the screen):
	// an Enter that arrives while a busy program is still reading the text is read as part
	// of it, and nothing is submitted. A fixed pause was not enough on a loaded machine.
	waitTaken(ctx, t.client, name, before, text)
	// And a moment after it shows (longer for an agent that needs it).
	pause := 100 * time.Millisecond
	if t.agent.EnterAfter > 0 {
		pause = t.agent.EnterAfter
	}
	time.Sleep(pause)
	// A program that is still busy (loading a resumed conversation) can drop the Enter,
	// and then nothing on the screen changes. Press it again, as a person would, while the
	// screen stays as it was (a few times, a couple of seconds apart).
	before = screenOf(ctx, t.client, name)
	// An agent whose hooks report its prompt and a turn's start, idle when the text
	// came, says itself whether the Enter was taken.
	hooked := t.agent.Status.Ready && t.agent.Status.Idle && st == "idle"
	for try := 0; try < 5; try++ {
		if out, code, err := run(ctx, t.client, "tmux", "-S", Socket, "send-keys", "-t", "="+name+":", "Enter"); err != nil || code != 0 {
			return fmt.Errorf("press Enter in session %q: %v %s", name, err, out)
		}
		if hooked {
			// Its hook says the turn started: the Enter was taken. A screen that
			// changed says less: on a loaded machine the late drawing of the paste
			// itself passed for it, and the message stayed in Gemini CLI's input.
			if turnStarts(ctx, t, 3*time.Second) {
				return nil
			}
			continue
		}
		if before == "" || screenChanged(ctx, t.client, name, before, 2*time.Second) {
			return nil
		}
	}
	return nil
}

// turnStarts says whether the session's agent, idle when a message was typed, reports
// itself at work (or anything but idle) within timeout.
func turnStarts(ctx context.Context, t *target, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		if l, err := readLive(ctx, t.client, t.se.Name); err == nil {
			if st, _ := statusOf(l, t.se.Name); st != "idle" {
				return true
			}
		}
	}
	return false
}

// SendTurn types text into a session as the next turn of its agent's conversation, as
// Send does, with the session working from that moment: an agent whose hook ends its
// turns (Codex has none at a turn's start) is not seen idle, its last turn's status,
// before it has taken the text in. A watcher of turns' ends (a task's checks) waits for
// this turn's.
func (s *Service) SendTurn(ctx context.Context, sandboxName, name, text string) error {
	t, err := s.resolve(ctx, sandboxName, name)
	if err != nil {
		return err
	}
	if !t.agent.Status.Idle {
		return s.Send(ctx, sandboxName, name, text) // its status is its process's alone
	}
	return s.startTurn(ctx, t, text, readyWait)
}

// pasteScript loads its standard input into a tmux buffer of its own ($3) and pastes it
// into session $2 on the server at $1: bracketed, when the program there asked for that.
const pasteScript = `tmux -S "$1" load-buffer -b "$3" - && tmux -S "$1" paste-buffer -p -d -b "$3" -t "=$2:"`

// paste puts text into a session's prompt as a paste, not key by key: a program that
// takes some keys as commands (Gemini CLI shows its shortcuts on "?", even mid-text)
// gets the text as it is, a newline in it does not submit it early, and its length is
// not bound by what a tmux command line carries.
func paste(ctx context.Context, c *guestclient.Client, name, text string) error {
	out := limitbuf.Buffer{Max: maxOutput}
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", pasteScript, "sh", Socket, name, "paddock-" + newUUID()},
		Stdin: strings.NewReader(text), Stdout: &out, Stderr: &out})
	if err != nil || code != 0 {
		return fmt.Errorf("type into session %q: exit %d: %v %s", name, code, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// closeCompletion is text with a space after it when its last word starts with @ or $:
// Codex completes the word at its cursor (files for @, skills for $), and the Enter
// after the paste then takes the completion and submits nothing; after a space there is
// no word to complete.
func closeCompletion(text string) string {
	last := text[strings.LastIndexAny(text, " \t\n")+1:]
	if strings.HasPrefix(last, "@") || strings.HasPrefix(last, "$") {
		return text + " "
	}
	return text
}

// screenOf is the session's screen now, "" when it cannot be read.
func screenOf(ctx context.Context, c *guestclient.Client, name string) string {
	screen, code, err := run(ctx, c, "tmux", "-S", Socket, "capture-pane", "-p", "-J", "-t", "="+name+":")
	if err != nil || code != 0 {
		return ""
	}
	return screen
}

// settleFor is how long an agent's screen must stay as it is before settled takes the
// agent to be at its prompt.
const settleFor = 700 * time.Millisecond

// settled waits, at most timeout, for the screen of an agent whose hooks do not say when
// it is at its prompt (Codex) to be drawn and to stay as it is for settleFor: a message
// pasted while it is still drawing its first screen shows in its input, but the Enter
// that follows is lost, and the message is never sent.
func settled(ctx context.Context, c *guestclient.Client, name string, timeout time.Duration) {
	last, since := "", time.Now()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(100 * time.Millisecond) {
		now := screenOf(ctx, c, name)
		if now != last || strings.TrimSpace(now) == "" {
			last, since = now, time.Now()
			continue
		}
		if time.Since(since) >= settleFor {
			return
		}
	}
}

// screenChanged reports whether the session's screen differs from before within timeout.
func screenChanged(ctx context.Context, c *guestclient.Client, name, before string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if now := screenOf(ctx, c, name); now != before {
			return true
		}
	}
	return false
}

// WaitReady waits (up to timeout) until a session's agent is at its prompt: its hooks
// have reported idle or waiting, or (agents without hooks) its process runs.
func (s *Service) WaitReady(ctx context.Context, sandboxName, name string, timeout time.Duration) (string, error) {
	t, err := s.resolve(ctx, sandboxName, name)
	if err != nil {
		return "", err
	}
	st := s.waitStatus(ctx, t, timeout, func(st string) bool { return st != "starting" })
	return st, nil
}

// Rename renames a session: its tmux session and its record.
func (s *Service) Rename(ctx context.Context, sandboxName, from, to string) error {
	if err := sandbox.ValidateName(to); err != nil {
		return apperr.Invalid("", "session name: %v", err)
	}
	t, err := s.resolve(ctx, sandboxName, from)
	if err != nil {
		return err
	}
	if err := s.store.RenameSession(ctx, t.sb.ID, from, to); errors.Is(err, store.ErrNameTaken) {
		return apperr.Conflict("choose another name", "sandbox %q already has a session named %q", sandboxName, to)
	} else if err != nil {
		return err
	}
	// All or nothing: a tmux session that cannot be renamed (one that is gone, after the
	// sandbox restarted, comes back under the new name) undoes the database's rename.
	if out, code, err := run(ctx, t.client, "tmux", "-S", Socket, "rename-session", "-t", "="+from, to); err != nil ||
		(code != 0 && !strings.Contains(out, "can't find session")) {
		if err == nil {
			err = fmt.Errorf("exit %d: %s", code, strings.TrimSpace(out))
		}
		if uerr := s.store.RenameSession(context.WithoutCancel(ctx), t.sb.ID, to, from); uerr != nil {
			s.log.Error("undo a session's rename", "sandbox", sandboxName, "from", to, "to", from, "err", uerr)
		}
		return fmt.Errorf("rename session %s of sandbox %s: tmux: %w", from, sandboxName, err)
	}
	if out, code, err := run(ctx, t.client, "sh", "-c", `[ ! -f "$1/$2.json" ] || mv "$1/$2.json" "$1/$3.json"`, "sh", StatusDir, from, to); err != nil || code != 0 {
		s.log.Warn("move a renamed session's status file; its status is unknown until its agent reports again",
			"sandbox", sandboxName, "session", to, "exit", code, "out", out, "err", err)
	}
	s.sandboxes.Emit(ctx, t.sb, events.Event{Kind: "session-renamed", Session: to, Detail: from + " to " + to,
		Attrs: map[string]string{"from": from}})
	return nil
}

// Remove ends a session's process and forgets it.
func (s *Service) Remove(ctx context.Context, sandboxName, name string) error {
	t, err := s.resolve(ctx, sandboxName, name)
	if err != nil {
		return err
	}
	if _, code, err := run(ctx, t.client, "sh", "-c", endSession, "sh", Socket, name); err != nil || code != 0 {
		return fmt.Errorf("end session %s of sandbox %s: exit %d: %v", name, sandboxName, code, err)
	}
	if out, code, err := run(ctx, t.client, "rm", "-f", StatusDir+"/"+name+".json"); err != nil || code != 0 {
		s.log.Warn("remove an ended session's status file", "sandbox", sandboxName, "session", name, "out", out, "err", err)
	}
	if err := s.store.DeleteSession(ctx, t.sb.ID, name); err != nil {
		return err
	}
	s.sandboxes.Emit(ctx, t.sb, events.Event{Kind: "session-removed", Session: name, Detail: name})
	return nil
}

// endSession ends a tmux session ($2 on the server at $1) and every process of the
// pane's terminal session, not only the pane's process. tmux's kill-session sends the
// pane's process SIGHUP, which an agent may not heed (Claude Code ignores it, and
// SIGTERM, under gVisor's runsc), and which reaches none of the session's other process
// groups (a shell's jobs, a nohup'd build): each process of the session gets SIGHUP, and
// those still there a second later SIGKILL.
const endSession = `pid=$(tmux -S "$1" display-message -p -t "=$2:" '#{pane_pid}' 2>/dev/null)
tmux -S "$1" kill-session -t "=$2" 2>/dev/null
[ -n "$pid" ] || exit 0
members() {
  for f in /proc/[0-9]*/stat; do
    read -r l < "$f" 2>/dev/null || continue
    set -- ${l##*) }
    [ "$4" = "$pid" ] && [ "$1" != Z ] && { p=${f#/proc/}; echo "${p%/stat}"; }
  done
}
for p in $(members); do kill -HUP "$p" 2>/dev/null; done
for _ in 1 2 3 4 5; do [ -n "$(members)" ] || exit 0; sleep 0.2; done
for p in $(members); do kill -KILL "$p" 2>/dev/null; done
exit 0`

func tailOf(s string) string {
	if len(s) > 400 {
		return s[len(s)-400:]
	}
	return s
}
