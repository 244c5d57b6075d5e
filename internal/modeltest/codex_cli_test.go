package modeltest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// codexEvent is one line of `codex exec --json`.
type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Item     struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"item"`
}

// runCodex runs `codex exec --json` with args after the common flags, and
// returns the thread id and the last agent message.
func runCodex(t *testing.T, s *OpenAIResponses, home, dir string, args ...string) (thread, answer string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args = append([]string{"exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "--json"}, args...)
	cmd, err := s.CodexCmd(ctx, home, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("codex %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e codexEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("codex printed a line that is not JSON: %q", sc.Text())
		}
		switch {
		case e.Type == "thread.started":
			thread = e.ThreadID
		case e.Type == "item.completed" && e.Item.Type == "agent_message":
			answer = e.Item.Text
		case e.Type == "error" || e.Type == "turn.failed":
			t.Errorf("codex reported %s", sc.Text())
		}
	}
	return thread, answer
}

// TestCodex drives the real Codex CLI through an exec_command call, a
// resume by thread id, and an apply_patch call.
func TestCodex(t *testing.T) {
	RequireCLI(t, "codex")
	s := NewOpenAIResponses(t)
	home, dir := t.TempDir(), t.TempDir()

	thread, answer := runCodex(t, s, home, dir, "RUN: echo hi > m.txt")
	if got, err := os.ReadFile(filepath.Join(dir, "m.txt")); err != nil || string(got) != "hi\n" {
		t.Errorf("m.txt = %q, %v: exec_command did not run the command", got, err)
	}
	if !strings.HasPrefix(answer, "DONE: ") || thread == "" {
		t.Errorf("thread %q, answer %q, want DONE: ...", thread, answer)
	}
	reqs := s.Requests()
	sawOutput := false
	for _, r := range reqs {
		if r.Path != "/v1/responses" || r.APIKey != TestKey || !r.Stream {
			t.Errorf("request to %s with key %q stream %v", r.Path, r.APIKey, r.Stream)
		}
		sawOutput = sawOutput || len(lastTurn(r.Messages).ToolResults) > 0
	}
	if !sawOutput {
		t.Error("server never saw a function_call_output")
	}

	n := len(reqs)
	resumed, answer := runCodex(t, s, home, dir, "resume", thread, "next")
	if answer != "ECHO: next" || resumed != thread {
		t.Errorf("resume: thread %q answer %q, want %q and ECHO: next", resumed, answer, thread)
	}
	reqs = s.Requests()
	if len(reqs) == n || !reqs[len(reqs)-1].Contains("RUN: echo hi > m.txt") {
		t.Error("the resumed request does not carry the earlier turn")
	}

	_, answer = runCodex(t, s, home, dir, "WRITE: w.txt")
	if got, err := os.ReadFile(filepath.Join(dir, "w.txt")); err != nil || string(got) != WriteContent {
		t.Errorf("w.txt = %q, %v: apply_patch did not write it", got, err)
	}
	if !strings.Contains(answer, "Success") {
		t.Errorf("apply_patch answer %q", answer)
	}
}
