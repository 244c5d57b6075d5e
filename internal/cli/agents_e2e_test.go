package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// scriptedModel is what the end-to-end tests read of a scripted model server.
type scriptedModel interface {
	Requests() []modeltest.Request
	Key() string
}

// agentRun is one agent CLI for cliEndToEnd.
type agentRun struct {
	agent string
	model scriptedModel
	// env points the daemon (and so the credential proxy) at the model, with the real key.
	env map[string]string
	// ready is text of the agent's prompt screen; kill a pkill -f pattern of its process.
	ready, kill string
	// dialogs are texts of first-run screens that must not show.
	dialogs []string
	// files lists the agent's own files, for the log of a failure.
	files string
	// hooks: the agent's hooks report its status (idle once a turn ends).
	hooks bool
}

// TestGeminiEndToEnd runs the real Gemini CLI in a sandbox against a scripted Gemini API
// server reached through the credential proxy.
func TestGeminiEndToEnd(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "gemini")
	model := modeltest.NewGemini(t)
	paddock := cliEndToEnd(t, gemini(model))

	// A turn whose model calls fail: Gemini CLI gives up, and --non-interactive fails
	// with its error (its transcript's error record), not at the end of a long wait.
	must := mustSucceed(t, paddock)
	waitUntil(t, 60*time.Second, "the session to go idle", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "idle")
	})
	model.SetFailing(400)
	out, errOut, code := paddock("", "chat", "repo/gemini", "--non-interactive", "-m", "this turn fails")
	model.SetFailing(0)
	if code != 1 || !strings.Contains(errOut, "API Error") || out != "" {
		t.Fatalf("--non-interactive whose turn failed: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

func gemini(model *modeltest.Gemini) agentRun {
	return agentRun{agent: "gemini", model: model, ready: "Type your message", kill: "^node.*[g]emini -m|^[g]emini -m",
		env:     map[string]string{"GOOGLE_GEMINI_BASE_URL": model.URL(), "GEMINI_API_KEY": "AIza-gemini-e2e-REAL-0123456789abcdef"},
		dialogs: []string{"Do you trust", "Get started", "Login with Google", "How would you like to authenticate"},
		files:   "/home/agent/.gemini/tmp/*/chats/*", hooks: true}
}

// TestGeminiTwoSessions: two Gemini conversations in one sandbox stay apart, each
// resumed by the id paddock chose for it (-r latest would give both the newest).
func TestGeminiTwoSessions(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "gemini")
	twoSessions(t, gemini(modeltest.NewGemini(t)))
}

// TestQwenEndToEnd runs the real Qwen Code in a sandbox against a scripted OpenAI
// Responses API server (an OpenAI-compatible endpoint) reached through the credential proxy.
func TestQwenEndToEnd(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "qwen")
	model := modeltest.NewOpenAIResponses(t)
	cliEndToEnd(t, agentRun{agent: "qwen", model: model, ready: "Type your message", kill: "^node .*[q]wen --auth-type",
		env:     map[string]string{"OPENAI_BASE_URL": model.URL() + "/v1", "OPENAI_API_KEY": "sk-qwen-e2e-REAL-0123456789abcdef"},
		dialogs: []string{"Do you trust", "Get started", "How would you like to authenticate", "Select Authentication"},
		files:   "/home/agent/.qwen/projects/*/chats/*", hooks: true})
}

// TestOpenCodeEndToEnd runs the real OpenCode in a sandbox against a scripted OpenAI
// Responses API server (an OpenAI-compatible endpoint) reached through the credential proxy.
func TestOpenCodeEndToEnd(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "opencode")
	model := modeltest.NewOpenAIResponses(t)
	cliEndToEnd(t, agentRun{agent: "opencode", model: model, ready: "ctrl+p", kill: "^[^ ]*[o]pencode",
		env:     map[string]string{"OPENAI_BASE_URL": model.URL() + "/v1", "OPENAI_API_KEY": "sk-opencode-e2e-REAL-0123456789abcdef"},
		dialogs: []string{"Permission required", "Select a model", "Connect a provider"},
		files:   "/home/agent/.config/opencode/*.json", hooks: true})
}

// cliEndToEnd makes the checks Claude Code's end-to-end test makes, for another agent CLI
// on bwrap: its first screen is its prompt with no dialog, a tool call runs in /workspace
// as agent, the transcript parses, --non-interactive returns the final text, a restart
// resumes the conversation, and the real key is nowhere inside. It returns its paddock,
// the sandbox "repo" still up, for more checks.
func cliEndToEnd(t *testing.T, a agentRun) paddockRun {
	paddock, must, screenOf := upAgent(t, a)
	target := "repo/" + a.agent
	pane := func() string { return screenOf(a.agent) }
	defer func() {
		if t.Failed() {
			t.Logf("screen:\n%s\nmodel requests: %d", pane(), len(a.model.Requests()))
			files, _, _ := paddock("", "exec", "repo", "--", "sh", "-c", "for f in "+a.files+"; do echo == $f; head -c 4000 $f; done")
			t.Logf("%s files:\n%s", a.agent, files)
			for _, r := range a.model.Requests() {
				t.Logf("request %s tools=%v body=%.300s", r.Path, r.Tools, r.Body)
			}
		}
	}()
	waitUntil(t, 90*time.Second, a.agent+"'s prompt", func() bool { return strings.Contains(pane(), a.ready) })
	screen := pane()
	t.Logf("%s's first screen:\n%s", a.agent, screen)
	for _, dialog := range a.dialogs {
		if strings.Contains(screen, dialog) {
			t.Fatalf("%s stopped at a dialog (%q):\n%s", a.agent, dialog, screen)
		}
	}

	// A prompt makes the model call the agent's shell tool, which runs in /workspace as agent.
	must("RUN: id -un > /workspace/whoami.txt && pwd >> /workspace/whoami.txt", "chat", target)
	waitUntil(t, 90*time.Second, "the tool's output file", func() bool {
		out, _, code := paddock("", "exec", "repo", "--", "cat", "/workspace/whoami.txt")
		return code == 0 && out == "agent\n/workspace\n"
	})
	if a.hooks {
		// The agent's own hooks say the turn is over: idle, which the process alone never tells.
		waitUntil(t, 30*time.Second, "the hooks to report idle", func() bool {
			return strings.Contains(must("", "chat", "repo", "--list", "--json"), `"status": "idle"`)
		})
	}
	var realKey string
	for k, v := range a.env {
		if strings.HasSuffix(k, "_KEY") {
			realKey = v
		}
	}
	if a.model.Key() != realKey {
		t.Fatalf("the model server got key %q, want the real one", a.model.Key())
	}

	// The transcript, in paddock's schema.
	waitUntil(t, 30*time.Second, "the whole turn in the transcript", func() bool {
		var entries []struct {
			Kind, Text, Tool string
			Input            json.RawMessage
		}
		out, _, code := paddock("", "transcript", target, "--json")
		if code != 0 || json.Unmarshal([]byte(out), &entries) != nil {
			return false
		}
		var prompt, call, done bool
		for _, e := range entries {
			prompt = prompt || e.Kind == "user" && strings.Contains(e.Text, "RUN: id -un")
			call = call || e.Kind == "tool_call" && strings.Contains(string(e.Input), "whoami.txt")
			done = done || e.Kind == "assistant" && strings.HasPrefix(e.Text, "DONE:")
		}
		return prompt && call && done
	})

	// --non-interactive: the final text on stdout.
	answer := must("what is the status?", "chat", target, "--non-interactive")
	if strings.TrimSpace(answer) != "ECHO: what is the status?" {
		t.Fatalf("--non-interactive answered %q", answer)
	}
	// One conversation: the session took the question, so the next message typed into it
	// reaches the model after the typed turn and the question, with their answers.
	typedSeesHistory(t, must, a.model, target, "typed after the question", 90*time.Second,
		"RUN: id -un", "DONE:", "what is the status?", "ECHO: what is the status?")
	waitUntil(t, 30*time.Second, "the typed turn in the transcript", func() bool {
		out, _, _ := paddock("", "transcript", target)
		return strings.Contains(out, "ECHO: typed after the question")
	})

	// Kill the agent: restart resumes the conversation.
	must("", "exec", "repo", "--", "sh", "-c", "pkill -KILL -f '"+a.kill+"' || true")
	waitUntil(t, 20*time.Second, "the session to show exited", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "exited")
	})
	// The dead pane still shows the old prompt: wait for the new process's screen, drawn
	// and settled, before typing (an agent without hooks reports no readiness). A resumed
	// agent may draw exactly the screen it had when it was killed: then its pane, alive
	// again, tells.
	alive := func() bool {
		out, _, code := paddock("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "display-message", "-p", "-t", a.agent, "#{pane_dead}")
		return code == 0 && strings.TrimSpace(out) == "0"
	}
	old := pane()
	must("", "restart", target)
	last, same := "", 0
	waitUntil(t, 90*time.Second, a.agent+"'s prompt after restart", func() bool {
		p := pane()
		if p == last {
			same++
		} else {
			last, same = p, 0
		}
		// The resumed history shown (its last message: the earlier ones may have scrolled
		// off a screen of 50 lines), and the screen still for a second.
		return strings.Contains(p, a.ready) && strings.Contains(p, "typed after the question") && same >= 5 && (p != old || alive())
	})
	before := len(a.model.Requests())
	must("after the restart", "chat", target)
	sent := time.Now()
	waitUntil(t, 90*time.Second, "the resumed conversation's request", func() bool {
		for _, r := range a.model.Requests()[before:] {
			if r.Contains("after the restart") && r.Contains("whoami.txt") {
				return true
			}
		}
		// An agent with no hooks says nothing of being ready: on a loaded machine it can
		// still clear its input after drawing its prompt. Say it again, as a person would.
		if time.Since(sent) > 20*time.Second {
			t.Logf("no request 20 s after the message; the screen:\n%s", pane())
			must("after the restart", "chat", target)
			sent = time.Now()
		}
		return false
	})

	// The real key is nowhere in the sandbox.
	nothingInside(t, must, "e2e-REA[L]", "the real key")
	return paddock
}

// twoSessions: two conversations of one agent in one sandbox stay apart. Each is
// restarted and resumes its own conversation (the model server sees each one's own
// history), and each transcript is its own.
func twoSessions(t *testing.T, a agentRun) {
	paddock, must, pane := upAgent(t, a)
	must("", "chat", "repo", "--new", "second", "--agent", a.agent)
	for _, s := range []string{a.agent, "second"} {
		waitUntil(t, 90*time.Second, s+"'s prompt", func() bool { return strings.Contains(pane(s), a.ready) })
	}
	files := map[string]string{a.agent: "first-file.txt", "second": "second-file.txt"}
	otherOf := map[string]string{a.agent: "second", "second": a.agent}
	sent := map[string]time.Time{}
	for s, f := range files {
		must("RUN: echo "+s+" > /workspace/"+f, "chat", "repo/"+s)
		sent[s] = time.Now()
	}
	defer func() {
		if t.Failed() {
			out, _, _ := paddock("", "chat", "repo", "--list", "--json")
			found, _, _ := paddock("", "exec", "repo", "--", "sh", "-c", "for f in "+a.files+"; do echo \"== $f\"; head -c 1200 \"$f\"; echo; done")
			t.Logf("sessions: %s\ntranscripts:\n%s", out, found)
		}
	}()
	// Both turns done before the agents are killed: each one's file written (its tool
	// ran), each session idle again with its id, and each conversation in its transcript.
	// An agent killed before it has saved its conversation has nothing to resume (Gemini
	// then exits 42), and a session is idle, with its id, before its first turn starts.
	waitUntil(t, 90*time.Second, "both turns to end, with their ids and transcripts", func() bool {
		done := true
		for s, f := range files {
			if _, _, code := paddock("", "exec", "repo", "--", "test", "-f", "/workspace/"+f); code == 0 {
				continue
			}
			done = false
			if time.Since(sent[s]) > 20*time.Second {
				// A loaded machine can let an agent clear its input after drawing its prompt.
				t.Logf("%s wrote no %s 20 s after the message; the screen:\n%s", s, f, pane(s))
				must("RUN: echo "+s+" > /workspace/"+f, "chat", "repo/"+s)
				sent[s] = time.Now()
			}
		}
		if !done {
			return false
		}
		var list []struct {
			Status   string `json:"status"`
			ResumeID string `json:"resume_id"`
			Messages int    `json:"messages"`
		}
		if err := json.Unmarshal([]byte(must("", "chat", "repo", "--list", "--json")), &list); err != nil || len(list) != 2 {
			return false
		}
		for _, s := range list {
			if s.Status != "idle" || s.ResumeID == "" || s.Messages < 2 {
				return false
			}
		}
		return true
	})
	must("", "exec", "repo", "--", "sh", "-c", "pkill -KILL -f '"+a.kill+"' || true")
	waitUntil(t, 20*time.Second, "both sessions to show exited", func() bool {
		return strings.Count(must("", "chat", "repo", "--list"), "exited") == 2
	})
	for s, f := range files {
		// The other's message (its file's name alone may show in a listing of /workspace).
		other := "echo " + otherOf[s] + " >"
		old := pane(s)
		must("", "restart", "repo/"+s)
		waitUntil(t, 90*time.Second, s+"'s prompt after restart", func() bool {
			p := pane(s)
			return p != old && strings.Contains(p, a.ready)
		})
		before := len(a.model.Requests())
		must("back to "+s, "chat", "repo/"+s)
		sent := time.Now()
		// Codex also sends the new message alone, to title the conversation in a side
		// thread: the conversation's own request is the one with history.
		waitUntil(t, 90*time.Second, s+"'s resumed request", func() bool {
			resumed := false
			for _, r := range a.model.Requests()[before:] {
				if !r.Contains("back to " + s) {
					continue
				}
				if r.Contains(other) {
					t.Fatalf("%s resumed the wrong conversation: its request has %s", s, other)
				}
				resumed = resumed || r.Contains(f)
			}
			if !resumed && time.Since(sent) > 20*time.Second {
				// A loaded machine can let an agent clear its input after drawing its prompt.
				t.Logf("no request 20 s after the message; the screen:\n%s", pane(s))
				must("back to "+s, "chat", "repo/"+s)
				sent = time.Now()
			}
			return resumed
		})
		tr := must("", "transcript", "repo/"+s, "--json")
		if !strings.Contains(tr, f) || strings.Contains(tr, other) {
			t.Fatalf("%s's transcript is not its own (has %s: %v, %s: %v)", s, f, strings.Contains(tr, f), other, strings.Contains(tr, other))
		}
	}
}

// upAgent makes sandbox "repo" on bwrap with a first session of a's agent, the daemon
// pointed at a's model; it returns paddock, the same failing the test on an error, and
// the screen of a session.
func upAgent(t *testing.T, a agentRun) (paddockRun, func(stdin string, args ...string) string, func(session string) string) {
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	h, repo := e2eHome(t)
	for k, v := range a.env {
		h.Setenv(k, v)
	}
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo, "--agent", a.agent)
	screen := func(session string) string {
		return must("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", session)
	}
	return paddock, must, screen
}

// typedSeesHistory types msg into session target (as `echo MSG | paddock chat TARGET`
// does) and fails the test unless the model's request for it carries want before it, in
// that order: the conversation the session continues.
func typedSeesHistory(t *testing.T, must func(stdin string, args ...string) string, model scriptedModel, target, msg string, wait time.Duration, want ...string) {
	t.Helper()
	before := len(model.Requests())
	must(msg, "chat", target)
	var req *modeltest.Request
	waitUntil(t, wait, "the typed message's request", func() bool {
		for _, r := range model.Requests()[before:] {
			if r.Contains(msg) && len(r.Messages) > 1 && !titleRequest(r) {
				req = &r
				return true
			}
		}
		return false
	})
	if err := inOrder(*req, append(want, msg)...); err != nil {
		t.Fatalf("the request of the message typed after --non-interactive: %v", err)
	}
}

// titleRequest says whether r is an agent asking the model for a title for the
// conversation (Codex, OpenCode): it carries the message typed, but not the turns before it,
// and may come before or after the turn's own request.
func titleRequest(r modeltest.Request) bool {
	return r.Contains("Generate a concise, single-line task title") || r.Contains("You are a title generator")
}

// inOrder checks that the request's messages carry want, each after the one before.
func inOrder(r modeltest.Request, want ...string) error {
	var history strings.Builder
	for _, m := range r.Messages {
		fmt.Fprintf(&history, "\n[%s] %s", m.Role, m.Text)
		for _, res := range m.ToolResults {
			fmt.Fprintf(&history, "\n[tool result] %s", res)
		}
	}
	h, at := history.String(), 0
	for _, w := range want {
		i := strings.Index(h[at:], w)
		if i < 0 {
			return fmt.Errorf("%q is not in the history after what came before it; the history:%s", w, h)
		}
		at += i + len(w)
	}
	return nil
}
