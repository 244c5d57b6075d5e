package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestQwenEndToEnd runs the real Qwen Code in a sandbox against a scripted OpenAI Responses API
// server reached through the credential proxy (an OpenAI-compatible endpoint), with the checks Claude Code's test makes.
func TestQwenEndToEnd(t *testing.T) {
	modeltest.RequireCLI(t, "qwen")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	model := modeltest.NewOpenAIResponses(t)
	const realKey = "sk-qwen-e2e-REAL-0123456789abcdef"
	t.Setenv("OPENAI_BASE_URL", model.URL()+"/v1")
	t.Setenv("OPENAI_API_KEY", realKey)
	_, repo := e2eHome(t)
	paddock := newPaddock(t)
	must := mustSucceed(t, paddock)
	must("", "up", repo, "--agent", "qwen")
	pane := func() string {
		return must("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", "qwen")
	}
	defer func() {
		if t.Failed() {
			t.Logf("screen:\n%s\nmodel requests: %d", pane(), len(model.Requests()))
			files, _, _ := paddock("", "exec", "repo", "--", "sh", "-c", "find /home/agent/.qwen -type f | head -30; for f in /home/agent/.qwen/projects/*/chats/*; do echo == $f; head -c 4000 $f; done")
			t.Logf("qwen files:\n%s", files)
			for _, r := range model.Requests() {
				t.Logf("request %s tools=%v body=%.300s", r.Path, r.Tools, r.Body)
			}
		}
	}()
	waitUntil(t, 90*time.Second, "Qwen Code's prompt", func() bool { return strings.Contains(pane(), "Type your message") })
	screen := pane()
	t.Logf("Qwen Code's first screen:\n%s", screen)
	for _, dialog := range []string{"Do you trust", "Get started", "Login with Google", "How would you like to authenticate"} {
		if strings.Contains(screen, dialog) {
			t.Fatalf("Qwen Code stopped at a dialog (%q):\n%s", dialog, screen)
		}
	}

	// A prompt makes the model call run_shell_command, which Qwen Code runs in /workspace as agent.
	must("RUN: id -un > /workspace/whoami.txt && pwd >> /workspace/whoami.txt", "chat", "repo/qwen")
	waitUntil(t, 90*time.Second, "the tool's output file", func() bool {
		out, _, code := paddock("", "exec", "repo", "--", "cat", "/workspace/whoami.txt")
		return code == 0 && out == "agent\n/workspace\n"
	})
	if model.Key() != realKey {
		t.Fatalf("the model server got key %q, want the real one", model.Key())
	}

	// The transcript, in paddock's schema.
	waitUntil(t, 30*time.Second, "the whole turn in the transcript", func() bool {
		var entries []struct {
			Kind, Text, Tool string
			Input            json.RawMessage
		}
		out, _, code := paddock("", "transcript", "repo/qwen", "--json")
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
	answer := must("what is the status?", "chat", "repo/qwen", "--non-interactive")
	if strings.TrimSpace(answer) != "ECHO: what is the status?" {
		t.Fatalf("--non-interactive answered %q", answer)
	}

	// Kill the agent: restart resumes the conversation.
	must("", "exec", "repo", "--", "sh", "-c", "pkill -KILL -f '[q]wen --auth-type' || true")
	waitUntil(t, 20*time.Second, "the session to show exited", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "exited")
	})
	must("", "restart", "repo/qwen")
	waitUntil(t, 90*time.Second, "Qwen Code's prompt after restart", func() bool { return strings.Contains(pane(), "Type your message") })
	before := len(model.Requests())
	must("after the restart", "chat", "repo/qwen")
	waitUntil(t, 90*time.Second, "the resumed conversation's request", func() bool {
		for _, r := range model.Requests()[before:] {
			if r.Contains("after the restart") && r.Contains("whoami.txt") {
				return true
			}
		}
		return false
	})

	// The real key is nowhere in the sandbox.
	leak := must("", "exec", "repo", "--", "sh", "-c",
		"cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c 'e2e-REA[L]' ; grep -rl 'e2e-REA[L]' /home/agent /workspace /tmp 2>/dev/null | wc -l")
	if f := strings.Fields(leak); len(f) != 2 || f[0] != "0" || f[1] != "0" {
		t.Fatalf("the real key leaked into the sandbox: %q", leak)
	}
}
