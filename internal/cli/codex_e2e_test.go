package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// TestCodexEndToEnd runs the real Codex CLI in a sandbox against a scripted Responses
// API server reached through the credential proxy.
func TestCodexEndToEnd(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "codex")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	model := modeltest.NewOpenAIResponses(t)
	const realKey = "sk-openai-e2e-REAL-0123456789abcdef"
	h, repo := e2eHome(t)
	h.Setenv("OPENAI_BASE_URL", model.URL()+"/v1")
	h.Setenv("OPENAI_API_KEY", realKey)
	paddock := newPaddock(h)
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
	// Every model call was metered to the session: Codex sends X-Paddock-Session.
	usage := must("", "chat", "repo", "--list")
	if !strings.Contains(usage, "~$") {
		t.Errorf("chat --list shows no cost for the session:\n%s", usage)
	}
	var rep struct {
		Groups []struct {
			Session  string `json:"session"`
			Requests int    `json:"requests"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(must("", "usage", "repo", "--json")), &rep); err != nil || len(rep.Groups) == 0 {
		t.Fatalf("usage: %+v, %v", rep, err)
	}
	for _, g := range rep.Groups {
		if g.Session != "codex" {
			t.Errorf("%d calls metered to session %q, want codex", g.Requests, g.Session)
		}
	}
	answer := must("", "chat", "repo/codex", "--non-interactive", "-m", "status please")
	if strings.TrimSpace(answer) != "ECHO: status please" {
		t.Fatalf("--non-interactive answered %q", answer)
	}
	typedSeesHistory(t, must, model, "repo/codex", "typed after the question", 60*time.Second,
		"RUN: id -un", "DONE:", "status please", "ECHO: status please")
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
	nothingInside(t, must, "e2e-REA[L]", "the real key")
	codexCheckpoints(t, must, model)

	// A question to a sandbox with no session starts one of its agent to take it.
	must("", "chat", "repo/codex", "--rm")
	if answer := must("", "chat", "repo", "--non-interactive", "-m", "from no session"); strings.TrimSpace(answer) != "ECHO: from no session" {
		t.Fatalf("--non-interactive to a sandbox with no session answered %q", answer)
	}
	if list := must("", "chat", "repo", "--list"); !strings.Contains(list, "repo/codex") || !strings.Contains(list, "idle") {
		t.Fatalf("the session started for the question:\n%s", list)
	}
}

// TestCodexTwoSessions: two Codex conversations in one sandbox stay apart, each resumed
// by the thread id its notify program reported.
func TestCodexTwoSessions(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "codex")
	model := modeltest.NewOpenAIResponses(t)
	twoSessions(t, agentRun{agent: "codex", model: model, ready: "›", kill: "^[^ ]*(node|codex)[^ ]* .*[c]odex.*--dangerously-bypass",
		env:   map[string]string{"OPENAI_BASE_URL": model.URL() + "/v1", "OPENAI_API_KEY": "sk-openai-two-0123456789abcdef"},
		files: "/home/agent/.codex/sessions/*/*/*/*.jsonl"})
}
