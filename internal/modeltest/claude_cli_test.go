package modeltest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// claudeLine is one line of `claude -p --output-format stream-json`.
type claudeLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Result    string `json:"result"`
	IsError   bool   `json:"is_error"`
}

// runClaude runs claude -p prompt in headless stream-json mode with extra
// args, and returns its init and result lines.
func runClaude(t *testing.T, s *Anthropic, home, dir, prompt string, extra ...string) (init, result claudeLine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}, extra...)
	cmd := s.ClaudeCmd(ctx, home, dir, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("claude %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l claudeLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("claude printed a line that is not JSON: %q", sc.Text())
		}
		switch {
		case l.Type == "system" && l.Subtype == "init":
			init = l
		case l.Type == "result":
			result = l
		}
	}
	if result.Type == "" {
		t.Fatalf("claude printed no result line:\n%s", out)
	}
	return init, result
}

// newUUID returns a random version 4 UUID.
func newUUID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// TestClaudeCode drives the real Claude Code CLI through a Bash tool call,
// a resume of the same session, and a Write tool call.
func TestClaudeCode(t *testing.T) {
	RequireCLI(t, "claude")
	s := NewAnthropic(t)
	home, dir := t.TempDir(), t.TempDir()
	id := newUUID(t)

	init, result := runClaude(t, s, home, dir, "RUN: echo hello-from-tool > marker.txt", "--session-id", id)
	if init.SessionID != id || result.SessionID != id {
		t.Errorf("session id: init %q, result %q, want %q", init.SessionID, result.SessionID, id)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "marker.txt")); err != nil || string(got) != "hello-from-tool\n" {
		t.Errorf("marker.txt = %q, %v: the Bash tool did not run the command", got, err)
	}
	if result.IsError || !strings.HasPrefix(result.Result, "DONE: ") {
		t.Errorf("final result %q (error %v), want DONE: ...", result.Result, result.IsError)
	}
	reqs := s.Requests()
	sawResult := false
	for _, r := range reqs {
		if r.Path != "/v1/messages" || r.APIKey != TestKey {
			t.Errorf("request to %s with key %q, want /v1/messages with %q", r.Path, r.APIKey, TestKey)
		}
		if r.Header.Get("X-Claude-Code-Session-Id") != id {
			t.Errorf("request session header %q, want %q", r.Header.Get("X-Claude-Code-Session-Id"), id)
		}
		last := lastTurn(r.Messages)
		sawResult = sawResult || len(last.ToolResults) > 0
	}
	if !sawResult || s.Key() != TestKey {
		t.Errorf("server saw a tool result: %v; last key %q", sawResult, s.Key())
	}

	n := len(reqs)
	_, result = runClaude(t, s, home, dir, "second message", "--resume", id)
	if result.Result != "ECHO: second message" {
		t.Errorf("resumed result %q, want ECHO: second message", result.Result)
	}
	if result.SessionID != id {
		t.Errorf("resume in -p mode changed the session id from %s to %s", id, result.SessionID)
	}
	reqs = s.Requests()
	if len(reqs) == n || !reqs[len(reqs)-1].Contains("RUN: echo hello-from-tool > marker.txt") {
		t.Errorf("the resumed request does not carry the earlier turn")
	}

	target := filepath.Join(dir, "sub", "written.txt")
	_, result = runClaude(t, s, home, dir, "WRITE: "+target)
	if got, err := os.ReadFile(target); err != nil || string(got) != WriteContent {
		t.Errorf("%s = %q, %v: the Write tool did not write it", target, got, err)
	}
	if !strings.HasPrefix(result.Result, "DONE: ") {
		t.Errorf("write result %q", result.Result)
	}
}
