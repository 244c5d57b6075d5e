package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestCodexEndToEnd runs the real Codex CLI in a sandbox against a scripted Responses
// API server reached through the credential proxy.
func TestCodexEndToEnd(t *testing.T) {
	modeltest.RequireCLI(t, "codex")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	model := modeltest.NewOpenAIResponses(t)
	const realKey = "sk-openai-e2e-REAL-0123456789abcdef"
	t.Setenv("OPENAI_BASE_URL", model.URL()+"/v1")
	t.Setenv("OPENAI_API_KEY", realKey)
	_, repo := e2eHome(t)
	paddock := newPaddock(t)
	must := mustSucceed(t, paddock)
	must("", "up", repo, "--agent", "codex")
	pane := func() string {
		return must("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", "codex")
	}
	waitUntil(t, 60*time.Second, "Codex's prompt", func() bool { return strings.Contains(pane(), "›") })
	t.Logf("Codex's first screen:\n%s", pane())

	must("RUN: id -un > /workspace/codex.txt", "chat", "repo/codex")
	defer func() {
		if t.Failed() {
			t.Logf("screen:\n%s\nmodel requests: %d", pane(), len(model.Requests()))
			for _, r := range model.Requests() {
				i := strings.Index(string(r.Body), `"tools"`)
				t.Logf("request %s tools=%v toolsjson=%.800s", r.Path, r.Tools, string(r.Body)[max(i, 0):])
			}
		}
	}()
	waitUntil(t, 60*time.Second, "the command's output file", func() bool {
		out, _, code := paddock("", "exec", "repo", "--", "cat", "/workspace/codex.txt")
		return code == 0 && out == "agent\n"
	})
	if model.Key() != realKey {
		t.Fatalf("the model server got key %q, want the real one", model.Key())
	}
	waitUntil(t, 30*time.Second, "the session to go idle", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "idle")
	})
	answer := must("", "chat", "repo/codex", "--non-interactive", "-m", "status please")
	if strings.TrimSpace(answer) != "ECHO: status please" {
		t.Fatalf("--non-interactive answered %q", answer)
	}
	transcript := must("", "transcript", "repo/codex", "--json")
	if !strings.Contains(transcript, "codex.txt") {
		t.Fatalf("the transcript lacks the command:\n%s", transcript)
	}

	must("", "exec", "repo", "--", "sh", "-c", "pkill -f '[c]odex.*--dangerously-bypass' || true")
	waitUntil(t, 20*time.Second, "the session to show exited", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "exited")
	})
	must("", "restart", "repo/codex")
	waitUntil(t, 60*time.Second, "Codex's prompt after restart", func() bool { return strings.Contains(pane(), "›") })
	before := len(model.Requests())
	must("after the restart", "chat", "repo/codex")
	waitUntil(t, 60*time.Second, "the resumed conversation's request", func() bool {
		for _, r := range model.Requests()[before:] {
			if r.Contains("after the restart") && r.Contains("codex.txt") {
				return true
			}
		}
		return false
	})

	// The real key is nowhere in the sandbox: no process's environment, no file.
	leak := must("", "exec", "repo", "--", "sh", "-c",
		"cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c 'e2e-REA[L]' ; grep -rl 'e2e-REA[L]' /home/agent /workspace /tmp 2>/dev/null | wc -l")
	if f := strings.Fields(leak); len(f) != 2 || f[0] != "0" || f[1] != "0" {
		t.Fatalf("the real key leaked into the sandbox: %q", leak)
	}
}

// TestCodexTwoSessions: two Codex conversations in one sandbox stay apart. Each is
// restarted and resumes its own conversation by the thread id its notify program
// reported (the model server sees each one's own history), and each transcript is its
// own.
func TestCodexTwoSessions(t *testing.T) {
	modeltest.RequireCLI(t, "codex")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	model := modeltest.NewOpenAIResponses(t)
	t.Setenv("OPENAI_BASE_URL", model.URL()+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-openai-two-0123456789abcdef")
	_, repo := e2eHome(t)
	paddock := newPaddock(t)
	must := mustSucceed(t, paddock)
	must("", "up", repo, "--agent", "codex")
	must("", "chat", "repo", "--new", "second", "--agent", "codex")
	pane := func(name string) string {
		return must("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", name)
	}
	for _, s := range []string{"codex", "second"} {
		waitUntil(t, 60*time.Second, s+"'s prompt", func() bool { return strings.Contains(pane(s), "›") })
	}
	files := map[string]string{"codex": "first-file.txt", "second": "second-file.txt"}
	for s, f := range files {
		must("RUN: echo "+s+" > /workspace/"+f, "chat", "repo/"+s)
	}
	defer func() {
		if t.Failed() {
			out, _, _ := paddock("", "chat", "repo", "--list", "--json")
			rollouts, _, _ := paddock("", "exec", "repo", "--", "find", "/home/agent/.codex/sessions", "-name", "*.jsonl")
			t.Logf("sessions: %s\nrollouts:\n%s", out, rollouts)
		}
	}()
	waitUntil(t, 90*time.Second, "both turns to end, with their ids", func() bool {
		out := must("", "chat", "repo", "--list", "--json")
		return strings.Count(out, `"status": "idle"`) == 2 && strings.Count(out, `"resume_id": "`) == 2
	})
	must("", "exec", "repo", "--", "sh", "-c", "pkill -f '[c]odex.*--dangerously-bypass' || true")
	waitUntil(t, 20*time.Second, "both sessions to show exited", func() bool {
		return strings.Count(must("", "chat", "repo", "--list"), "exited") == 2
	})
	for s, f := range files {
		other := files[map[string]string{"codex": "second", "second": "codex"}[s]]
		must("", "restart", "repo/"+s)
		waitUntil(t, 60*time.Second, s+"'s prompt after restart", func() bool { return strings.Contains(pane(s), "›") })
		before := len(model.Requests())
		must("back to "+s, "chat", "repo/"+s)
		// Codex also sends the new message alone, to title the conversation in a side
		// thread: the conversation's own request is the one with history.
		waitUntil(t, 60*time.Second, s+"'s resumed request", func() bool {
			resumed := false
			for _, r := range model.Requests()[before:] {
				if !r.Contains("back to " + s) {
					continue
				}
				if r.Contains(other) {
					t.Fatalf("%s resumed the wrong conversation: its request has %s", s, other)
				}
				resumed = resumed || r.Contains(f)
			}
			return resumed
		})
		tr := must("", "transcript", "repo/"+s, "--json")
		if !strings.Contains(tr, f) || strings.Contains(tr, other) {
			t.Fatalf("%s's transcript is not its own (has %s: %v, %s: %v)", s, f, strings.Contains(tr, f), other, strings.Contains(tr, other))
		}
	}
}
