package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/cli"
	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// planned is a CALL line of a scripted prompt: the scripted model makes the calls in order.
func planned(tool string, input map[string]any) string {
	raw, _ := json.Marshal(input)
	return fmt.Sprintf("CALL: %s %s\n", tool, raw)
}

// runHome makes a home whose daemon's Anthropic provider is a scripted server holding a
// real key, and a repository with a shell "test" that fails.
func runHome(t *testing.T) (h *clitest.Home, repo string, srv *modeltest.Anthropic) {
	t.Helper()
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	srv = modeltest.NewAnthropic(t)
	h, repo = e2eHome(t)
	h.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	h.Setenv("ANTHROPIC_API_KEY", realRunKey)
	os.WriteFile(filepath.Join(repo, "sum.sh"), []byte("echo $((1 + 1))\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "test.sh"), []byte("test \"$(sh sum.sh)\" = 3 && echo PASS || { echo FAIL: got $(sh sum.sh); exit 1; }\n"), 0o644)
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "sum"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return h, repo, srv
}

const realRunKey = "sk-ant-real-run-key-0123456789"

// runRecord is what `paddock run show --json` prints.
type runRecord struct {
	ID, Sandbox, Status, Error string
	Turns                      int
	ToolCalls                  int `json:"tool_calls"`
	InputTokens                int `json:"input_tokens"`
	CacheReadTokens            int `json:"cache_read_tokens"`
	Steps                      []struct {
		Kind, Name, Input, Output string
		IsError                   bool `json:"is_error"`
	}
}

func showRun(t *testing.T, must func(string, ...string) string, id string) runRecord {
	t.Helper()
	var r runRecord
	if err := json.Unmarshal([]byte(must("", "run", "show", id, "--json")), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// lastRun is the newest run's id.
func lastRun(t *testing.T, must func(string, ...string) string) string {
	t.Helper()
	var list []struct{ ID string }
	if err := json.Unmarshal([]byte(must("", "runs", "--json")), &list); err != nil || len(list) == 0 {
		t.Fatalf("paddock runs --json: %v %d", err, len(list))
	}
	return list[0].ID
}

// TestRunEndToEnd: `paddock run` on a bwrap sandbox fixes a failing test, with the loop on
// the host: it reads, edits, sees the test fail, edits again and sees it pass; each step
// shows on the terminal and in `run show`; the real key reaches the model server and is
// nowhere in the sandbox; a 429 is tried again; a budget stops the run; a run continues.
func TestRunEndToEnd(t *testing.T) {
	t.Parallel()
	h, repo, srv := runHome(t)
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo)

	srv.Fail(429)
	prompt := "make test.sh pass\n" +
		planned("read_file", map[string]any{"path": "sum.sh"}) +
		planned("edit_file", map[string]any{"path": "sum.sh", "old_string": "1 + 1", "new_string": "1 + 3"}) +
		planned("run_command", map[string]any{"command": "sh test.sh"}) +
		planned("edit_file", map[string]any{"path": "sum.sh", "old_string": "1 + 3", "new_string": "1 + 2"}) +
		planned("run_command", map[string]any{"command": "sh test.sh && git commit -qam 'fix sum' && echo committed"})
	out, errOut, code := paddock("", "run", "repo", prompt)
	if code != 0 {
		t.Fatalf("paddock run: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"429", "trying again", "> read_file sum.sh", "> edit_file sum.sh", "> run_command sh test.sh",
		"  | FAIL: got 4", "< error: [exit code 1", "  | PASS", "  | committed", " done: 6 turn(s), 5 tool call(s)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the terminal does not show %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(out, "Step 1: read_file.") || !strings.Contains(out, "DONE: PASS\ncommitted") {
		t.Errorf("stdout is not the model's text: %q", out)
	}
	if got := must("", "exec", "repo", "--", "sh", "-c", "cat sum.sh; git log -1 --format=%s; git status --short"); got != "echo $((1 + 2))\nfix sum\n" {
		t.Errorf("the sandbox after the run: %q", got)
	}
	id := lastRun(t, must)
	r := showRun(t, must, id)
	if r.Status != "done" || r.Turns != 6 || r.ToolCalls != 5 || r.CacheReadTokens != 6*modeltest.AnthropicCacheRead || r.InputTokens == 0 {
		t.Errorf("run record: %+v", r)
	}
	var kinds []string
	for _, st := range r.Steps {
		kinds = append(kinds, st.Kind+":"+st.Name)
	}
	if strings.Join(kinds, " ") != "prompt: turn: tool:read_file turn: tool:edit_file turn: tool:run_command turn: tool:edit_file turn: tool:run_command turn:" {
		t.Errorf("steps: %v", kinds)
	}
	if st := r.Steps[6]; !st.IsError || !strings.Contains(st.Output, "FAIL: got 4") {
		t.Errorf("the failing test step: %+v", st)
	}
	text := must("", "run", "show", id)
	if !strings.Contains(text, "run_command {\"command\":\"sh test.sh\"} (error") || !strings.Contains(text, "    FAIL: got 4") {
		t.Errorf("run show:\n%s", text)
	}
	for _, req := range srv.Requests() {
		if req.APIKey != realRunKey {
			t.Fatalf("the model server got key %q, not the real one", req.APIKey)
		}
	}
	nothingInside(t, must, realRunKey, "the real key")
	events := must("", "events", "--sandbox", "repo", "--no-follow", "--json")
	for _, kind := range []string{`"kind":"run-started"`, `"kind":"run-tool"`, `"kind":"run-finished"`} {
		if !strings.Contains(events, kind) {
			t.Errorf("the event stream has no %s", kind)
		}
	}

	// Continue the conversation: the model sees the earlier turns.
	out = must("", "run", "repo", "--resume", id, "now say hi")
	if last := srv.Requests()[len(srv.Requests())-1]; !last.Contains("make test.sh pass") || !last.Contains("now say hi") {
		t.Errorf("the resumed run did not send the earlier conversation")
	}
	if !strings.Contains(out, "ECHO:") && !strings.Contains(out, "DONE:") {
		t.Errorf("resumed answer: %q", out)
	}

	// --detach leaves the run working and prints its id; run follow waits for its end
	// (what it streams on the way depends on when it joins).
	out = must("", "run", "repo", "--detach", planned("run_command", map[string]any{"command": "sleep 2; echo followed"}))
	detached := strings.TrimSpace(out)
	_, errOut, code = paddock("", "run", "follow", detached)
	if code != 0 || !strings.Contains(errOut, "run "+detached+" done: 2 turn(s), 1 tool call(s)") {
		t.Errorf("run follow: exit %d\n%s", code, errOut)
	}
	if r := showRun(t, must, detached); r.Status != "done" || !strings.Contains(r.Steps[2].Output, "followed") {
		t.Errorf("the detached run: %+v", r)
	}

	// A budget stops the run with a clear message.
	out, errOut, code = paddock("", "run", "repo", "--max-turns", "1", strings.Repeat(planned("run_command", map[string]any{"command": "true"}), 3))
	if code != 1 || !strings.Contains(errOut, "the run used its budget of 1 turns") || !strings.Contains(errOut, "--resume") {
		t.Errorf("--max-turns 1: exit %d\n%s%s", code, out, errOut)
	}
	if r := showRun(t, must, lastRun(t, must)); r.Status != "stopped" {
		t.Errorf("a run over its budget is %q", r.Status)
	}

	// Bad input is refused before anything is made.
	for _, args := range [][]string{{"run", "repo", ""}, {"run", "nosuch", "x"}, {"run", "repo", "--max-turns", "-1", "x"}, {"run", "repo", "--resume", "rnope", "x"}} {
		if _, errOut, code := paddock("", args...); code == 0 || !strings.Contains(errOut, "paddock: ") {
			t.Errorf("paddock %v: exit %d %s", args, code, errOut)
		}
	}
	var list []struct{ ID string }
	json.Unmarshal([]byte(must("", "runs", "--json")), &list)
	if len(list) != 3 { // the resumed run is the same run
		t.Errorf("%d runs recorded, want 3", len(list))
	}
}

// TestRunCancelAndCrash: Ctrl-C in the middle of a tool kills it and records the run as
// cancelled; a daemon killed (kill -9) during a run leaves it interrupted, and --resume
// continues its conversation.
func TestRunCancelAndCrash(t *testing.T) {
	t.Parallel()
	h, repo, srv := runHome(t)
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo)

	started := func(file string) func() bool {
		return func() bool { _, _, code := paddock("", "exec", "repo", "--", "test", "-s", file); return code == 0 }
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var errOut strings.Builder
	go func() {
		f := h.Factory(cli.IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &errOut})
		done <- cli.Run(ctx, f, []string{"run", "repo", planned("run_command", map[string]any{"command": "echo $$ > pid1; sleep 120"})})
	}()
	waitUntil(t, 30*time.Second, "the command to start", started("pid1"))
	cancel()
	select {
	case code := <-done:
		if code != 130 {
			t.Errorf("paddock run after Ctrl-C: exit %d\n%s", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("paddock run did not end after Ctrl-C")
	}
	if got := must("", "exec", "repo", "--", "sh", "-c", "test -d /proc/$(cat pid1) && echo alive || echo gone"); got != "gone\n" {
		t.Errorf("the cancelled command is %s", got)
	}
	id := lastRun(t, must)
	if r := showRun(t, must, id); r.Status != "cancelled" || len(r.Steps) < 3 || !strings.Contains(r.Steps[2].Output, "cancelled by the user") {
		t.Errorf("cancelled run: %+v", r)
	}

	// kill -9 the daemon while a tool runs.
	go func() {
		_, _, code := paddock("", "run", "repo", planned("run_command", map[string]any{"command": "echo $$ > pid2; sleep 120"}))
		done <- code
	}()
	waitUntil(t, 30*time.Second, "the command to start", started("pid2"))
	killWait(t, clitest.DaemonPID(h.Dir))
	if code := <-done; code == 0 {
		t.Error("paddock run succeeded with its daemon killed")
	}
	id = lastRun(t, must) // starts a new daemon
	if r := showRun(t, must, id); r.Status != "interrupted" || !strings.Contains(r.Error, "--resume") {
		t.Fatalf("run after a daemon kill: %+v", r)
	}
	before := len(srv.Requests())
	out := must("", "run", "repo", "--resume", id, "go on")
	reqs := srv.Requests()[before:]
	if len(reqs) != 1 || !reqs[0].Contains("pid2") || !reqs[0].Contains("go on") || !reqs[0].Contains("interrupted") {
		t.Fatalf("the resumed run did not carry the conversation on: %d requests", len(reqs))
	}
	if !strings.Contains(out, "DONE:") {
		t.Errorf("resumed run answered %q", out)
	}
	if r := showRun(t, must, id); r.Status != "done" {
		t.Errorf("the resumed run is %s", r.Status)
	}
}

// TestRunOnAMinimalSandbox: paddock run works in a sandbox whose root filesystem holds
// busybox and git, nothing else: no node, no agent CLI, no ripgrep (search_files falls
// back to the Files service).
func TestRunOnAMinimalSandbox(t *testing.T) {
	t.Parallel()
	busybox := testenv.Program(t, "busybox", "apt-get install busybox-static")
	h, repo, _ := runHome(t)
	rootfs := minimalRootfs(t, busybox, h.Dir)
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo, "--rootfs", rootfs, "--name", "mini")
	if out := must("", "exec", "mini", "--", "sh", "-c", "for p in node npm rg claude python3; do command -v $p; done; ls /usr/bin"); out != "git\n" {
		t.Fatalf("the minimal sandbox has more than it should: %q", out)
	}
	prompt := planned("search_files", map[string]any{"pattern": "1 \\+ 1"}) +
		planned("list_files", map[string]any{}) +
		planned("write_file", map[string]any{"path": "notes/n.txt", "content": "kept\n"}) +
		planned("run_command", map[string]any{"command": "cat notes/n.txt; busybox | head -1"})
	out, errOut, code := paddock("", "run", "mini", prompt)
	if code != 0 {
		t.Fatalf("paddock run on a minimal sandbox: exit %d\n%s%s", code, out, errOut)
	}
	r := showRun(t, must, lastRun(t, must))
	if len(r.Steps) < 9 || r.Steps[2].Output != "sum.sh:1:echo $((1 + 1))\n" || !strings.Contains(r.Steps[4].Output, "test.sh") ||
		!strings.Contains(r.Steps[8].Output, "kept\nBusyBox") {
		t.Errorf("steps on the minimal sandbox: %+v", r.Steps)
	}
}

// minimalRootfs makes a root filesystem of busybox, and git with its libraries, in home.
func minimalRootfs(t *testing.T, busybox, home string) string {
	t.Helper()
	dir := filepath.Join(home, "rootfs")
	copyFile := func(src, dst string, mode os.FileMode) {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(busybox, filepath.Join(dir, "bin", "busybox"), 0o755)
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, applet := range strings.Fields(string(out)) {
		os.Symlink("busybox", filepath.Join(dir, "bin", applet))
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	copyFile(git, filepath.Join(dir, "usr", "bin", "git"), 0o755)
	libs, err := exec.Command("ldd", git).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(libs), "\n") {
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "/") {
				copyFile(f, filepath.Join(dir, f), 0o755)
			}
		}
	}
	for _, d := range []string{"etc", "tmp", "usr/share"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "etc", "passwd"), []byte("root:x:0:0::/root:/bin/sh\nagent:x:1000:1000::/home/agent:/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "etc", "group"), []byte("root:x:0:\nagent:x:1000:\n"), 0o644)
	return dir
}

// TestRunOnOpenAI: with [run] provider = "openai", paddock run speaks the Responses API to
// the provider's base URL with its real key, and the work lands in the sandbox.
func TestRunOnOpenAI(t *testing.T) {
	t.Parallel()
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	srv := modeltest.NewOpenAIResponses(t)
	h, repo := e2eHome(t)
	home := h.Dir
	h.Setenv("OPENAI_BASE_URL", srv.URL()+"/v1")
	h.Setenv("OPENAI_API_KEY", "sk-openai-real-run-0123456789")
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[run]\nprovider = \"openai\"\nmodel = \"gpt-test\"\n"), 0o600)
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo)
	out := must("", "run", "repo", "write it\n"+planned("write_file", map[string]any{"path": "hello.txt", "content": "from the loop\n"}))
	if !strings.Contains(out, "DONE: wrote 14 bytes to hello.txt") {
		t.Errorf("the answer: %q", out)
	}
	if got := must("", "exec", "repo", "--", "cat", "hello.txt"); got != "from the loop\n" {
		t.Errorf("the sandbox: %q", got)
	}
	if r := showRun(t, must, lastRun(t, must)); r.Status != "done" || r.ToolCalls != 1 || r.CacheReadTokens != 2*modeltest.OpenAICached {
		t.Errorf("the run: %+v", r)
	}
	for _, req := range srv.Requests() {
		if req.APIKey != "sk-openai-real-run-0123456789" || req.Model != "gpt-test" {
			t.Fatalf("a request with key %q model %q", req.APIKey, req.Model)
		}
	}
	nothingInside(t, must, "sk-openai-real-run", "the real key")
	if _, errOut, code := paddock("", "run", "repo", "--model", "x", "hi"); code != 0 {
		t.Errorf("--model over the config's: exit %d %s", code, errOut)
	}
}
