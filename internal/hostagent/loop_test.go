package hostagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/modeltest"
)

// call is a CALL line of a scripted prompt.
func call(tool string, input map[string]any) string {
	raw, _ := json.Marshal(input)
	return fmt.Sprintf("CALL: %s %s\n", tool, raw)
}

// TestLoopFixesAFailingTest: the model reads a file, edits it, runs the tests, sees them
// fail, edits again, runs them to a pass and finishes; every step acts on the sandbox's
// files, and the key arrives upstream.
func TestLoopFixesAFailingTest(t *testing.T) {
	l, srv, rec, root := newLoop(t)
	writeFile(t, filepath.Join(root, "sum.sh"), "echo $((1 + 1))\n")
	writeFile(t, filepath.Join(root, "test.sh"), "test \"$(sh sum.sh)\" = 3 && echo PASS || { echo FAIL: got $(sh sum.sh); exit 1; }\n")
	prompt := "make test.sh pass\n" +
		call("read_file", map[string]any{"path": "sum.sh"}) +
		call("edit_file", map[string]any{"path": "sum.sh", "old_string": "1 + 1", "new_string": "1 + 3"}) +
		call("run_command", map[string]any{"command": "sh test.sh"}) +
		call("edit_file", map[string]any{"path": "sum.sh", "old_string": "1 + 3", "new_string": "1 + 2"}) +
		call("run_command", map[string]any{"command": "sh test.sh"})
	conv, err := l.Run(t.Context(), nil, prompt)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "sum.sh")); string(got) != "echo $((1 + 2))\n" {
		t.Fatalf("sum.sh = %q", got)
	}
	if len(rec.tools) != 5 {
		t.Fatalf("%d tool calls, want 5: %+v", len(rec.tools), rec.tools)
	}
	if r := rec.tools[0].r; r.IsError || !strings.Contains(r.Text, "     1\techo $((1 + 1))") {
		t.Errorf("read_file answered %+v", r)
	}
	if r := rec.tools[2].r; !r.IsError || !strings.Contains(r.Text, "FAIL: got 4") || !strings.Contains(r.Text, "exit code 1") {
		t.Errorf("the first test run answered %+v, want a failure", r)
	}
	if r := rec.tools[4].r; r.IsError || !strings.Contains(r.Text, "PASS") || !strings.Contains(r.Text, "exit code 0") {
		t.Errorf("the second test run answered %+v, want a pass", r)
	}
	last := conv[len(conv)-1]
	if last.Role != "assistant" || !strings.HasPrefix(last.Text(), "DONE: PASS") {
		t.Errorf("the run ended with %+v", last)
	}
	reqs := srv.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d model calls, want 6", len(reqs))
	}
	for _, r := range reqs {
		if r.APIKey != "sk-real-key" || !r.Stream || !r.HasTool("edit_file") || !strings.Contains(r.System, "/workspace") {
			t.Fatalf("a model call was not as sent by the loop: key %q stream %v tools %v", r.APIKey, r.Stream, r.Tools)
		}
	}
	if !strings.Contains(string(reqs[5].Body), `"cache_control"`) {
		t.Error("the model calls ask for no prompt caching")
	}
	if !strings.Contains(rec.text.String(), "Step 3: run_command.") {
		t.Errorf("streamed text: %q", rec.text.String())
	}
}

// TestEditFileRefusals: no match and two matches are refused with what to do, and the file
// is left as it was.
func TestEditFileRefusals(t *testing.T) {
	tools, root := newSandbox(t)
	writeFile(t, filepath.Join(root, "a.txt"), "x = 1\nx = 1\n")
	edit := func(old string, all bool) Result {
		in, _ := json.Marshal(map[string]any{"path": "a.txt", "old_string": old, "new_string": "x = 2", "replace_all": all})
		r, err := tools.Call(t.Context(), "edit_file", in, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := edit("y = 1", false); !r.IsError || !strings.Contains(r.Text, "old_string was not found in a.txt") {
		t.Errorf("no match: %+v", r)
	}
	if r := edit("x = 1", false); !r.IsError || !strings.Contains(r.Text, "old_string matches 2 places in a.txt") {
		t.Errorf("two matches: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(got) != "x = 1\nx = 1\n" {
		t.Fatalf("a refused edit changed the file: %q", got)
	}
	if r := edit("x = 1", true); r.IsError || !strings.Contains(r.Text, "replaced 2") {
		t.Errorf("replace_all: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(got) != "x = 2\nx = 2\n" {
		t.Fatalf("after replace_all: %q", got)
	}
}

// TestToolsStayBeneathTheRoot: the file tools refuse paths out of the workspace, by .. or
// by a symlink the agent made, and say so.
func TestToolsStayBeneathTheRoot(t *testing.T) {
	tools, root := newSandbox(t)
	secret := filepath.Join(filepath.Dir(root), "secret")
	writeFile(t, secret, "host secret\n")
	if err := os.Symlink(secret, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(root), filepath.Join(root, "up")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, input string }{
		{"read_file", `{"path":"../secret"}`},
		{"read_file", `{"path":"link"}`},
		{"write_file", `{"path":"up/secret","content":"pwned"}`},
		{"edit_file", `{"path":"link","old_string":"host","new_string":"pwned"}`},
		{"search_files", `{"pattern":"secret","path":"up"}`},
	} {
		r, err := tools.Call(t.Context(), c.tool, json.RawMessage(c.input), nil)
		if err != nil {
			t.Fatalf("%s %s: %v", c.tool, c.input, err)
		}
		if !r.IsError || strings.Contains(r.Text, "host secret") {
			t.Errorf("%s %s was not refused: %+v", c.tool, c.input, r)
		}
	}
	// A symlink is listed and written as itself, never followed.
	if r, err := tools.Call(t.Context(), "list_files", json.RawMessage(`{"path":"up/"}`), nil); err != nil || strings.Contains(r.Text, "secret") {
		t.Errorf("list_files through a symlink: %v %+v", err, r)
	}
	if r, err := tools.Call(t.Context(), "write_file", json.RawMessage(`{"path":"link","content":"mine"}`), nil); err != nil || r.IsError {
		t.Errorf("write_file over a symlink: %v %+v", err, r)
	}
	if got, _ := os.ReadFile(secret); string(got) != "host secret\n" {
		t.Fatalf("a tool wrote outside the workspace: %q", got)
	}
}

// TestReadFileWindowsAndBinary: offset and limit pick lines, a binary file is not shown.
func TestReadFileWindowsAndBinary(t *testing.T) {
	tools, root := newSandbox(t)
	var b strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeFile(t, filepath.Join(root, "long.txt"), b.String())
	writeFile(t, filepath.Join(root, "bin"), "ELF\x00\x01\x02")
	read := func(input string) Result {
		r, err := tools.Call(t.Context(), "read_file", json.RawMessage(input), nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := read(`{"path":"long.txt"}`); !strings.Contains(r.Text, "  2000\tline 2000\n[lines 1-2000 of 3000: read on with offset 2001]") {
		t.Errorf("default window: %q", r.Text[len(r.Text)-100:])
	}
	if r := read(`{"path":"long.txt","offset":2999,"limit":5}`); r.Text != "  2999\tline 2999\n  3000\tline 3000\n" {
		t.Errorf("offset window: %q", r.Text)
	}
	if r := read(`{"path":"bin"}`); !r.IsError || !strings.Contains(r.Text, "binary file (6 bytes)") {
		t.Errorf("binary: %+v", r)
	}
	if r := read(`{"path":"nope"}`); !r.IsError || r.Text != "nope does not exist" {
		t.Errorf("missing: %+v", r)
	}
}

// TestSearchWithAndWithoutRipgrep: the Go fallback answers as rg does.
func TestSearchWithAndWithoutRipgrep(t *testing.T) {
	tools, root := newSandbox(t)
	writeFile(t, filepath.Join(root, "a.go"), "package a\nfunc Needle() {}\n")
	writeFile(t, filepath.Join(root, "sub", "b.go"), "package sub\n// Needle here\n")
	writeFile(t, filepath.Join(root, "sub", "c.txt"), "Needle in text\n")
	writeFile(t, filepath.Join(root, ".git", "d.go"), "Needle in git\n")
	search := func(input string) string {
		r, err := tools.Call(t.Context(), "search_files", json.RawMessage(input), nil)
		if err != nil || r.IsError {
			t.Fatalf("search %s: %v %+v", input, err, r)
		}
		return r.Text
	}
	want := "a.go:2:func Needle() {}\nsub/b.go:2:// Needle here\n"
	tools.rgOnce.Do(func() {}) // no rg: the fallback
	if got := search(`{"pattern":"Need+le","glob":"*.go"}`); got != want {
		t.Errorf("fallback search: %q, want %q", got, want)
	}
	if got := search(`{"pattern":"absent"}`); got != "no matches" {
		t.Errorf("fallback, no match: %q", got)
	}
	if _, err := os.Stat("/usr/bin/rg"); err != nil {
		t.Skip("no rg here (apt-get install ripgrep) to compare with")
	}
	tools.hasRg = true
	got := strings.Split(strings.TrimSpace(search(`{"pattern":"Need+le","glob":"*.go"}`)), "\n")
	if len(got) != 2 || !strings.Contains(strings.Join(got, "\n"), "a.go:2:func Needle() {}") || !strings.Contains(strings.Join(got, "\n"), "sub/b.go:2:// Needle here") {
		t.Errorf("rg search: %q", got)
	}
}

// TestCommandTimeout: a command that outlives its timeout is killed, and the model is told.
func TestCommandTimeout(t *testing.T) {
	tools, _ := newSandbox(t)
	start := time.Now()
	r, err := tools.Call(t.Context(), "run_command", json.RawMessage(`{"command":"echo started; sleep 30","timeout_seconds":1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(r.Text, "started") || !strings.Contains(r.Text, "did not finish within 1s and was killed") {
		t.Errorf("timeout: %+v", r)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the command ran %s: not killed", took)
	}
}

// TestCancelInATool: cancelling the run while a command runs kills the command, answers
// the call as cancelled, and leaves a conversation that can go on.
func TestCancelInATool(t *testing.T) {
	l, srv, rec, root := newLoop(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var conv []Message
	go func() {
		var err error
		conv, err = l.Run(ctx, nil, call("run_command", map[string]any{"command": "echo $$ > pid; sleep 60; touch finished"}))
		done <- err
	}()
	<-rec.started
	pidFile := filepath.Join(root, "pid")
	for i := 0; i < 200; i++ {
		if data, _ := os.ReadFile(pidFile); strings.HasSuffix(string(data), "\n") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v", err)
	}
	data, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	for i := 0; pid > 0 && i < 100; i++ {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			pid = 0
		}
		time.Sleep(20 * time.Millisecond)
	}
	if pid != 0 {
		t.Fatalf("the command (pid %s) still runs after cancel", data)
	}
	last := conv[len(conv)-1]
	if last.Role != "user" || len(last.Content) != 1 || !strings.Contains(last.Content[0].Text, "cancelled by the user") {
		t.Fatalf("the conversation ends with %+v", last)
	}
	l.Events = newRecorder()
	conv, err := l.Run(t.Context(), conv, "go on")
	if err != nil || conv[len(conv)-1].Text() != "DONE: run_command was cancelled by the user" || !srv.Requests()[1].Contains("go on") {
		t.Fatalf("after a cancel, the run does not go on: %v %+v", err, conv[len(conv)-1])
	}
}

// TestRetries: a 429, a 529 and a stream cut short are tried again; the user hears of
// each; a model that keeps failing gives up with the reason.
func TestRetries(t *testing.T) {
	l, srv, rec, _ := newLoop(t)
	srv.Fail(429)
	srv.Fail(529)
	srv.Drop()
	conv, err := l.Run(t.Context(), nil, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if conv[len(conv)-1].Text() != "ECHO: hello" {
		t.Fatalf("answer: %+v", conv[len(conv)-1])
	}
	if len(rec.retries) != 3 || !strings.Contains(rec.retries[0].Error(), "429") || !strings.Contains(rec.retries[1].Error(), "529") {
		t.Fatalf("retries: %v", rec.retries)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Fatalf("%d requests, want 4", n)
	}
	for range 4 {
		srv.Fail(500)
	}
	_, err = l.Run(t.Context(), conv, "again")
	if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "gave up after 4 attempts") {
		t.Fatalf("a model failing every time: %v", err)
	}
	srv.Fail(400)
	if _, err = l.Run(t.Context(), conv, "again"); err == nil || strings.Contains(err.Error(), "gave up") {
		t.Fatalf("a 400 is not tried again: %v", err)
	}
}

// TestBudgets: --max-turns and --max-tokens stop the run between turns, every tool call
// answered.
func TestBudgets(t *testing.T) {
	l, _, _, _ := newLoop(t)
	prompt := strings.Repeat(call("run_command", map[string]any{"command": "true"}), 5)
	l.Budget = Budget{MaxTurns: 2}
	conv, err := l.Run(t.Context(), nil, prompt)
	var be *BudgetError
	if !errors.As(err, &be) || be.What != "turns" || err.Error() != "the run used its budget of 2 turns (2 used)" {
		t.Fatalf("max turns: %v", err)
	}
	if conv[len(conv)-1].Role != "user" || len(conv) != 5 {
		t.Fatalf("conversation after the budget: %d messages, last %+v", len(conv), conv[len(conv)-1])
	}
	l.Budget = Budget{MaxTokens: 100}
	if _, err := l.Run(t.Context(), nil, prompt); !errors.As(err, &be) || be.What != "tokens" {
		t.Fatalf("max tokens: %v", err)
	}
}

// TestCompaction: when the conversation outgrows the context budget, old tool output is
// cut in what the model is sent, the newest is whole, and the run keeps all of it.
func TestCompaction(t *testing.T) {
	l, srv, rec, _ := newLoop(t)
	l.ContextTokens = 8000
	big := call("run_command", map[string]any{"command": "seq 1 6000"})
	prompt := strings.Repeat(big, 6)
	if _, err := l.Run(t.Context(), nil, prompt); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "of this old tool output left out") {
		t.Fatal("the last model call carries every old output whole")
	}
	if strings.Count(last, "\\n5999\\n6000") < 4 || len(last) > 8000*4+20000 {
		t.Errorf("the last call (%d bytes) lost the tails or stayed too long", len(last))
	}
	for _, te := range rec.tools {
		if !strings.Contains(te.r.Full, "\n3000\n") {
			t.Fatal("the run's record lost output")
		}
	}
	if !strings.Contains(string(reqs[len(reqs)-1].Body), "\\n3000\\n") {
		t.Error("the newest output was cut too")
	}
}

// TestHugeOutputIsBounded: a command that prints far more than a run keeps leaves the
// daemon its head and tail, and the model less still.
func TestHugeOutputIsBounded(t *testing.T) {
	tools, _ := newSandbox(t)
	var streamed int
	r, err := tools.Call(t.Context(), "run_command", json.RawMessage(`{"command":"echo first; head -c 30000000 /dev/zero | tr '\\0' a; echo; echo last"}`),
		func(s string) { streamed += len(s) })
	if err != nil {
		t.Fatal(err)
	}
	if streamed < 30_000_000 {
		t.Errorf("only %d bytes streamed", streamed)
	}
	if len(r.Full) > keepBytes+200 || !strings.HasPrefix(r.Full, "first\n") || !strings.Contains(r.Full, "bytes of output not kept") ||
		!strings.Contains(r.Full, "\nlast\n") {
		t.Errorf("the kept output: %d bytes, head %q, tail %q", len(r.Full), r.Full[:10], r.Full[len(r.Full)-40:])
	}
	if len(r.Text) > maxToolText+200 || !strings.Contains(r.Text, "\nlast\n") {
		t.Errorf("the model's output: %d bytes", len(r.Text))
	}
}

// TestLoopOnOpenAI: the same fix through the OpenAI Responses API (an OpenAI-compatible
// provider): function tools offered, calls made and answered by call id, the key sent as
// a bearer token, cached input counted as read from the cache.
func TestLoopOnOpenAI(t *testing.T) {
	srv := modeltest.NewOpenAIResponses(t)
	tools, root := newSandbox(t)
	rec := newRecorder()
	l := &Loop{Model: &OpenAI{BaseURL: srv.URL() + "/v1", Model: "gpt-test", Key: func(context.Context) (string, error) { return "sk-openai-real", nil }},
		Tools: tools, System: SystemPrompt, Events: rec, Retry: Retry{Attempts: 2, Base: 10 * time.Millisecond, Max: 10 * time.Millisecond}}
	writeFile(t, filepath.Join(root, "sum.sh"), "echo $((1 + 1))\n")
	conv, err := l.Run(t.Context(), nil, "fix it\n"+
		call("edit_file", map[string]any{"path": "sum.sh", "old_string": "1 + 1", "new_string": "1 + 2"})+
		call("run_command", map[string]any{"command": "sh sum.sh"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "sum.sh")); string(got) != "echo $((1 + 2))\n" {
		t.Errorf("sum.sh = %q", got)
	}
	if last := conv[len(conv)-1]; !strings.HasPrefix(last.Text(), "DONE: 3") {
		t.Errorf("the run ended with %+v", last)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].APIKey != "sk-openai-real" || !reqs[0].HasTool("read_file") || !strings.Contains(reqs[0].System, "/workspace") {
		t.Fatalf("%d requests; the first: key %q tools %v", len(reqs), reqs[0].APIKey, reqs[0].Tools)
	}
	if !reqs[2].Contains("replaced 1 occurrence") || !reqs[2].Contains("3\n") {
		t.Errorf("the last request lacks the tools' results: %+v", reqs[2].Messages)
	}
	if !strings.Contains(rec.text.String(), "Step 2: run_command.") {
		t.Errorf("streamed text: %q", rec.text.String())
	}
}
