package guestcmd

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/paddockhq/paddock/internal/inside"
)

// newNotify is what agents' hooks run inside a sandbox to report a session's
// status (working, waiting, idle), and what tmux runs when a session's process ends
// (exited). It writes the session's status file, which the guest watches and the
// daemon reads on demand. It never fails the hook: problems go to stderr.
func newNotify(s IO) command {
	return command{name: "notify", usage: "--status working|waiting|idle|exited [--session NAME] [--exit-status N] [HOOK-JSON]",
		short: "Report a session's status from an agent's hook (inside a sandbox)",
		setup: func(fs *flag.FlagSet) runFunc {
			status := fs.String("status", "", "working, waiting, idle or exited")
			name := fs.String("session", "", "the session (default $PADDOCK_SESSION)")
			exitStatus := fs.String("exit-status", "", "with --status exited: the process's exit status")
			idGlob := fs.String("conversation-file", "", "a glob with {id} naming the conversation's transcript: a report whose id has no such file is ignored")
			return func(_ context.Context, args []string) error {
				notify(s, *status, cmp.Or(*name, os.Getenv("PADDOCK_SESSION")), *exitStatus, *idGlob, args)
				return nil
			}
		}}
}

// notify writes session name's status file; args are the hook's (its JSON, when not on
// stdin).
func notify(s IO, status, name, exitStatus, idGlob string, args []string) {
	if name == "" {
		return // not in a paddock session: nothing to report
	}
	path := filepath.Join(inside.StatusDir, filepath.Base(name)+".json")
	id := hookSessionID(s.In, args)
	if idGlob != "" && id != "" && !conversationExists(idGlob, id) {
		// A turn of a thread that is not the conversation (Codex titles a new
		// conversation in a thread of its own): not this session's news.
		return
	}
	rec := map[string]any{"status": status, "time": time.Now().Unix()}
	if status == "exited" && exitStatus != "" {
		rec["exit_status"] = exitStatus
	}
	if id != "" {
		rec["agent_session"] = id
	} else if id := previousAgentSession(path); id != "" {
		// Keep the conversation id an earlier report gave: restart needs it.
		rec["agent_session"] = id
	}
	data, _ := json.Marshal(rec)
	if err := writeAtomic(path, data); err != nil {
		fmt.Fprintf(s.ErrOut, "paddock guest notify: %v\n", err)
	}
}

// previousAgentSession is the conversation id in a session's status file, if any.
func previousAgentSession(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var v struct {
		AgentSession string `json:"agent_session"`
	}
	json.Unmarshal(data, &v)
	return v.AgentSession
}

// hookSessionID finds the agent's conversation id in a hook's input: Claude Code sends a
// JSON object on stdin, Codex passes one as the last argument.
func hookSessionID(in io.Reader, args []string) string {
	var raw []byte
	if len(args) > 0 {
		raw = []byte(args[len(args)-1])
	} else if file, ok := in.(*os.File); ok && !term.IsTerminal(int(file.Fd())) {
		done := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(io.LimitReader(in, 1<<20))
			done <- b
		}()
		select {
		case raw = <-done:
		case <-time.After(500 * time.Millisecond): // a stdin nobody closes
		}
	}
	var v struct {
		SessionID string `json:"session_id"`
		ThreadID  string `json:"thread-id"`
		Thread2   string `json:"thread_id"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	for _, id := range []string{v.SessionID, v.ThreadID, v.Thread2} {
		if id != "" {
			return id
		}
	}
	return ""
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// conversationExists says whether the glob, {id} replaced by id, names a file.
func conversationExists(glob, id string) bool {
	if strings.ContainsAny(id, "/*?[") {
		return false
	}
	matches, _ := filepath.Glob(strings.ReplaceAll(glob, "{id}", id))
	return len(matches) > 0
}
