package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/backend/vagrant/vagranttest"
	"github.com/paddockhq/paddock/internal/clitest"
	"github.com/paddockhq/paddock/internal/modeltest"
	"github.com/paddockhq/paddock/internal/testenv"
)

// paddockRun runs the CLI in-process and returns its stdout, stderr and exit code.
type paddockRun func(stdin string, args ...string) (string, string, int)

// newPaddock runs the CLI of home h in-process.
func newPaddock(h *clitest.Home) paddockRun { return h.Run }

// mustSucceed wraps a paddock runner: it returns stdout and fails the test on a non-zero exit.
func mustSucceed(t *testing.T, paddock paddockRun) func(stdin string, args ...string) string {
	return func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := paddock(stdin, args...)
		if code != 0 {
			t.Fatalf("paddock %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
}

// e2eHome makes an isolated home (clitest.New: its own PADDOCK_HOME and environment,
// every sandbox removed at the end) and a git repo "repo" in it.
func e2eHome(t testing.TB) (h *clitest.Home, repo string) {
	h = clitest.New(t)
	return h, h.InitRepo("repo")
}

// upRepo makes an isolated home with a sandbox "repo" on bwrap, and returns a paddock
// that fails tb when a command fails, and the home.
func upRepo(tb testing.TB) (run func(args ...string) string, h *clitest.Home) {
	tb.Helper()
	testenv.Program(tb, "bwrap", "apt-get install bubblewrap")
	h, repo := e2eHome(tb)
	run = h.Must
	run("up", repo)
	return run, h
}

// waitUntil polls cond every 200 ms for up to d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestClaudeEndToEnd runs the real Claude Code CLI in a bwrap sandbox against a scripted
// model server reached through the credential proxy.
func TestClaudeEndToEnd(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "claude")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	h, must, model := claudeEndToEndIn(t, "bwrap", "", nil, 1)
	askEdges(t, newPaddock(h), must, model)
	claudeAlarms(t, h, must)
}

// askEdges checks `chat --non-interactive` at the edges, on session repo/claude after
// claudeEndToEndIn: a busy session is refused at once, a session whose process is gone
// is brought back, resuming its conversation, to answer, and a turn the agent ends with
// an API error fails the command with that error.
func askEdges(t *testing.T, paddock paddockRun, must mustRun, model *modeltest.Anthropic) {
	idle := func() bool { return strings.Contains(must("", "chat", "repo", "--list"), "idle") }
	waitUntil(t, 60*time.Second, "the session to go idle", idle)
	model.SetDelay(5 * time.Second)
	must("a slow turn", "chat", "repo/claude")
	waitUntil(t, 20*time.Second, "the session to show working", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "working")
	})
	began := time.Now()
	if _, errOut, code := paddock("", "chat", "repo/claude", "--non-interactive", "-m", "are you free?"); code != 4 || !strings.Contains(errOut, "busy") {
		t.Fatalf("--non-interactive to a working session: exit %d\n%s", code, errOut)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("the busy session was refused after %v, not at once", d)
	}
	model.SetDelay(0)
	waitUntil(t, 60*time.Second, "the slow turn to end, saved", func() bool {
		return idle() && strings.Contains(must("", "transcript", "repo/claude"), "ECHO: a slow turn")
	})
	// A session whose agent waits for an answer to its own question (its Notification hook
	// says so) is refused too: the message would answer the question.
	must("", "exec", "repo", "--", "sh", "-c", `printf '{"status":"waiting"}' > /run/paddock/sessions/claude.json`)
	if _, errOut, code := paddock("", "chat", "repo/claude", "--non-interactive", "-m", "are you free now?"); code != 4 || !strings.Contains(errOut, "waits for your answer") {
		t.Fatalf("--non-interactive to a waiting session: exit %d\n%s", code, errOut)
	}
	must("", "exec", "repo", "--", "sh", "-c", `printf '{"status":"idle"}' > /run/paddock/sessions/claude.json`)

	must("", "exec", "repo", "--", "sh", "-c", "pkill -KILL -f '^[c]laude --dangerously-skip-permissions' || true")
	waitUntil(t, 20*time.Second, "the session to show exited", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "exited")
	})
	before := len(model.Requests())
	if answer := must("", "chat", "repo/claude", "--non-interactive", "-m", "after the kill"); strings.TrimSpace(answer) != "ECHO: after the kill" {
		t.Fatalf("--non-interactive to an exited session answered %q", answer)
	}
	for _, r := range model.Requests()[before:] {
		if r.Contains("after the kill") {
			if err := inOrder(r, "typed after the questions", "a slow turn", "after the kill"); err != nil {
				t.Fatalf("the session brought back for the question did not resume its conversation: %v", err)
			}
		}
	}
	if list := must("", "chat", "repo", "--list"); !strings.Contains(list, "idle") {
		t.Fatalf("after the question the session is not back at its prompt:\n%s", list)
	}

	// The model fails every try: Claude Code gives up, and so does the command.
	for range 15 {
		model.Fail(400)
	}
	out, errOut, code := paddock("", "chat", "repo/claude", "--non-interactive", "-m", "this turn fails")
	model.ClearFaults()
	if code != 1 || !strings.Contains(errOut, "API Error: 400") || out != "" {
		t.Fatalf("--non-interactive whose turn failed: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	waitUntil(t, 20*time.Second, "the session idle after the failed turn", idle)
}

// TestClaudeEndToEndDocker is the same, in a docker container whose image has Claude Code
// (`paddock image build --agents claude`).
func TestClaudeEndToEndDocker(t *testing.T) {
	t.Parallel()
	if !dockerReady() {
		testenv.Missing(t, "no docker engine with the paddock/sandbox image", "make setup")
	}
	claudeEndToEnd(t, "docker", "")
}

// TestClaudeEndToEndVagrant is the same in a Vagrant machine (the real vagrant with its
// docker provider, running a box image of paddock's sandbox image with an SSH server).
func TestClaudeEndToEndVagrant(t *testing.T) {
	t.Parallel()
	if !dockerReady() {
		testenv.Missing(t, "no docker engine with the paddock/sandbox image", "make setup")
	}
	claudeEndToEnd(t, "vagrant", vagranttest.Config(t))
}

// TestClaudeEndToEndDockerRunsc is the same in a container under gVisor (`up --runtime
// runsc`), which `make setup` registers with the engine.
func TestClaudeEndToEndDockerRunsc(t *testing.T) {
	t.Parallel()
	if !dockerReady() {
		testenv.Missing(t, "no docker engine with the paddock/sandbox image", "make setup")
	}
	if out, _ := exec.Command("docker", "info", "--format", "{{json .Runtimes.runsc}}").Output(); !strings.Contains(string(out), "runsc") {
		testenv.Missing(t, "runsc is not registered with the engine", "make setup")
	}
	claudeEndToEnd(t, "docker", "", "--runtime", "runsc")
}

// TestClaudeEndToEndMicroVM is the same in a microVM under QEMU (under TCG here, where
// everything in the VM runs tens of times slower: its waits are ten times longer), its
// root made from the paddock/sandbox image, which has Claude Code. Its checkpoints are
// bisected and rewound there, and turn 1 forked out of the VM onto bwrap.
func TestClaudeEndToEndMicroVM(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "a microVM")
	if !microvmReady() {
		testenv.Missing(t, "the microvm backend is unavailable (QEMU, a kernel, the paddock/sandbox image and root)", "make setup")
	}
	guest, err := testenv.SmallGuest()
	if err != nil {
		t.Fatal(err)
	}
	_, must, model := claudeEndToEndIn(t, "microvm", fmt.Sprintf("guest_binary = %q\n", guest), shareMicroVMImages, 10)

	// Suspended and resumed, Claude Code is the same process: its session is not exited,
	// and the next message reaches the model through the credential proxy's tunnel,
	// which came back with the guest's new connection.
	claudePid := func() string {
		return strings.TrimSpace(must("", "exec", "repo", "--", "pgrep", "-o", "-f", "^claude --dangerously-skip-permissions"))
	}
	pid := claudePid()
	must("", "stop", "--suspend", "repo")
	if ls := must("", "ls"); !strings.Contains(ls, "suspended") {
		t.Fatalf("ls after stop --suspend:\n%s", ls)
	}
	began := time.Now()
	must("", "start", "repo")
	t.Logf("resumed in %v", time.Since(began).Round(time.Millisecond))
	if after := claudePid(); after != pid {
		t.Fatalf("Claude Code's pid was %s before the suspend, %s after", pid, after)
	}
	if list := must("", "chat", "repo", "--list"); strings.Contains(list, "exited") {
		t.Fatalf("after the resume the session shows exited:\n%s", list)
	}
	before := len(model.Requests())
	must("after the resume", "chat", "repo/claude")
	waitUntil(t, 10*60*time.Second, "the request after the resume", func() bool {
		for _, r := range model.Requests()[before:] {
			if r.Contains("after the resume") {
				return true
			}
		}
		return false
	})
	claudeRewindFirstTurn(t, must, model, "after the resume", 10)
	forkOutOf(t, must, model, 10)
}

// claudeEndToEnd runs the checks on backend, with config (TOML, when not empty) as the
// daemon's config file.
func claudeEndToEnd(t *testing.T, backend, config string, upArgs ...string) {
	claudeEndToEndIn(t, backend, config, nil, 1, upArgs...)
}

// mustRun runs paddock with stdin as its input, fails the test on a non-zero exit and
// returns stdout.
type mustRun func(stdin string, args ...string) string

// claudeEndToEndIn is claudeEndToEnd with prepare (when not nil) run on the daemon's home
// before anything, and every wait for the sandbox slow times longer. It returns its
// paddock and model server, the sandbox "repo" still up, for more checks.
func claudeEndToEndIn(t *testing.T, backend, config string, prepare func(t *testing.T, home string), slow time.Duration, upArgs ...string) (*clitest.Home, mustRun, *modeltest.Anthropic) {
	model := modeltest.NewAnthropic(t)
	const realKey = "sk-ant-e2e-REAL-0123456789abcdefghijklmnop"
	h, repo := e2eHome(t)
	h.Setenv("ANTHROPIC_BASE_URL", model.URL())
	h.Setenv("ANTHROPIC_API_KEY", realKey)
	home := h.Dir
	if config != "" {
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if prepare != nil {
		prepare(t, home)
	}
	began := time.Now()
	defer func() { t.Logf("on %s, from up to the end: %v", backend, time.Since(began).Round(time.Second)) }()
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)

	// up --agent claude: a sandbox and a first session, straight at Claude's prompt.
	must("", append([]string{"up", repo, "--agent", "claude", "--backend", backend}, upArgs...)...)
	pane := func() string {
		return must("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", "claude")
	}
	// A failed wait shows where Claude was: its screen, and how far the model got.
	t.Cleanup(func() {
		if t.Failed() {
			out, _, _ := paddock("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", "claude")
			t.Logf("Claude's screen at the end (the model had %d requests):\n%s", len(model.Requests()), out)
		}
	})
	waitUntil(t, slow*60*time.Second, "Claude's prompt", func() bool { return strings.Contains(pane(), "❯") })
	screen := pane()
	t.Logf("Claude's first screen:\n%s", screen)
	for _, dialog := range []string{"Do you want to use this API key", "trust the files", "Bypass Permissions mode", "Choose the text style", "No, exit"} {
		if strings.Contains(screen, dialog) {
			t.Fatalf("Claude stopped at a dialog (%q):\n%s", dialog, screen)
		}
	}

	// A prompt sent by chat makes the model call Bash, which Claude runs in /workspace as
	// agent; the sandbox learns meanwhile what it reaches for (a host its Bash call fetches).
	must("", "net", "learn", "repo", "--for", "30m")
	must("RUN: id -un > /workspace/whoami.txt && pwd >> /workspace/whoami.txt; curl -s -o /dev/null https://learned.example.org/x || true", "chat", "repo/claude")
	waitUntil(t, slow*60*time.Second, "the tool's output file", func() bool {
		out, _, code := paddock("", "exec", "repo", "--", "cat", "/workspace/whoami.txt")
		return code == 0 && out == "agent\n/workspace\n"
	})
	waitUntil(t, slow*30*time.Second, "the session to go idle", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "idle")
	})
	// Claude Code started and worked a turn without asking for a host of its own: no
	// update, no plugin marketplace (downloads.claude.ai) left for the user to review.
	if denials := must("", "net", "denials", "--sandbox", "repo"); strings.Contains(denials, "claude.ai") {
		t.Fatalf("Claude Code asked for a host of Anthropic's besides the model's:\n%s", denials)
	}
	// Learn mode proposes the host Claude's Bash call fetched, refused meanwhile, as a rule
	// to add; the model's own calls go through the credential proxy, never the egress proxy.
	proposal := must("", "net", "propose", "repo")
	if !regexp.MustCompile(`(?m)^\+ allow +learned\.example\.org +repo +1 refused`).MatchString(proposal) {
		t.Fatalf("net propose repo, after Claude fetched learned.example.org:\n%s", proposal)
	}
	must("", "net", "learn", "repo", "--stop")
	if model.Key() != realKey {
		t.Fatalf("the model server got key %q, want the real one", model.Key())
	}

	// The transcript, in paddock's schema (Claude Code writes it a moment after its hooks run).
	var sawPrompt, sawCall, sawResult, sawDone bool
	var entries []struct {
		Kind, Text, Tool, Output string
		Input                    json.RawMessage
	}
	waitUntil(t, slow*20*time.Second, "the whole turn in the transcript", func() bool {
		entries = nil
		if err := json.Unmarshal([]byte(must("", "transcript", "repo/claude", "--json")), &entries); err != nil {
			t.Fatal(err)
		}
		sawPrompt, sawCall, sawResult, sawDone = false, false, false, false
		for _, e := range entries {
			sawPrompt = sawPrompt || e.Kind == "user" && strings.Contains(e.Text, "RUN: id -un")
			sawCall = sawCall || e.Kind == "tool_call" && e.Tool == "Bash" && strings.Contains(string(e.Input), "whoami.txt")
			sawResult = sawResult || e.Kind == "tool_result"
			sawDone = sawDone || e.Kind == "assistant" && strings.HasPrefix(e.Text, "DONE:")
		}
		return sawPrompt && sawCall && sawResult && sawDone
	})
	list := must("", "chat", "repo", "--list", "--json")
	if !strings.Contains(list, `"agent": "claude"`) || strings.Contains(list, `"messages": 0`) {
		t.Fatalf("chat --list: %s", list)
	}
	// The sandbox's flight record holds the session's launch and its model calls,
	// attributed to it, and the commands run in the sandbox for the test; its chain holds.
	record := must("", "audit", "repo/claude", "--json")
	for _, want := range []string{`"event": "session-started"`, `"argv": "'claude' '--dangerously-skip-permissions'`, `"kind": "credential"`, `"provider": "anthropic"`, `"session": "claude"`} {
		if !strings.Contains(record, want) {
			t.Fatalf("audit repo/claude --json has no %s:\n%s", want, record)
		}
	}
	if all := must("", "audit", "repo", "--json"); !strings.Contains(all, `"argv": "[\"cat\",\"/workspace/whoami.txt\"]"`) {
		t.Fatalf("audit repo --json lacks the exec of cat:\n%s", all)
	}
	if out := must("", "audit", "--verify", "repo"); !strings.HasPrefix(out, "repo: ok") {
		t.Fatalf("audit --verify repo: %s", out)
	}

	// --non-interactive: the model's final text on stdout, the session left running.
	answer := must("what is the status?", "chat", "repo/claude", "--non-interactive")
	if strings.TrimSpace(answer) != "ECHO: what is the status?" {
		t.Fatalf("--non-interactive answered %q", answer)
	}
	// Text from the sandbox is printed by transcript with its control characters shown, so
	// an answer cannot retitle, clear or drive the user's terminal.
	// (The text comes from a command's output: typed into the session, an escape would be
	// a key.)
	if answer := must(`RUN: printf 'retitle \033]0;pwned\007 now'`, "chat", "repo/claude", "--non-interactive"); !strings.HasPrefix(answer, "DONE: retitle") {
		t.Fatalf("--non-interactive answered a turn with a tool call %q, not its final answer", answer)
	}
	shown := must("", "transcript", "repo/claude")
	if strings.ContainsRune(shown, 0x1b) || !strings.Contains(shown, `retitle \x1b]0;pwned\x07 now`) {
		t.Fatalf("transcript printed the sandbox's control characters as they are:\n%q", shown)
	}
	// The tool call reads as Claude made it, without the JSON escapes of < > &.
	if !regexp.MustCompile(`(?m)^tool_call +Bash .*id -un > /workspace/whoami.txt && pwd`).MatchString(shown) || strings.Contains(shown, `\u00`) {
		t.Fatalf("transcript shows the tool call with JSON escapes:\n%s", shown)
	}
	// One conversation: the session itself took those questions, so the next message
	// typed into it reaches the model after the typed turn and the questions, with their
	// answers, in order.
	typedSeesHistory(t, must, model, "repo/claude", "typed after the questions", slow*60*time.Second,
		"RUN: id -un", "DONE:", "what is the status?", "ECHO: what is the status?", "RUN: printf", "DONE: retitle")
	// Its turn saved before the agent is killed below (its transcript is written a moment
	// after the turn).
	waitUntil(t, slow*20*time.Second, "the typed turn in the transcript", func() bool {
		return strings.Contains(must("", "transcript", "repo/claude"), "ECHO: typed after the questions")
	})

	// Kill the agent's process: the session shows exited; restart resumes the conversation.
	// (SIGKILL: under gVisor's 2022 runsc, Claude Code heeds neither SIGTERM nor SIGHUP.)
	must("", "exec", "repo", "--", "sh", "-c", "pkill -KILL -f '^[c]laude --dangerously-skip-permissions' || true")
	waitUntil(t, slow*20*time.Second, "the session to show exited", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "exited")
	})
	must("", "restart", "repo/claude")
	waitUntil(t, slow*60*time.Second, "Claude's prompt after restart", func() bool { return strings.Contains(pane(), "❯") })
	before := len(model.Requests())
	must("after the restart", "chat", "repo/claude")
	waitUntil(t, slow*60*time.Second, "the resumed conversation's request", func() bool {
		reqs := model.Requests()
		for _, r := range reqs[before:] {
			if r.Contains("after the restart") && r.Contains("whoami.txt") {
				return true
			}
		}
		return false
	})

	// The real key is nowhere in the sandbox.
	nothingInside(t, must, "e2e-REA[L]", "the real key")
	return h, must, model
}

// TestClaudeFork starts Claude Code with a first prompt (`up --agent claude --prompt`),
// which reaches the model as the conversation's first message with nobody typing, and
// forks that session: the fork starts on a copy of the conversation (its first request
// carries the earlier turn) under its own id, and what is said in the fork stays out of
// the original's transcript. Then `up` on the existing sandbox starts another session of
// Claude Code there, at work on its own first prompt in a conversation of its own, and so
// does the body the web UI's new-session form posts.
func TestClaudeFork(t *testing.T) {
	t.Parallel()
	modeltest.RequireCLI(t, "claude")
	testenv.Program(t, "bwrap", "apt-get install bubblewrap")
	model := modeltest.NewAnthropic(t)
	h, repo := e2eHome(t)
	h.Setenv("ANTHROPIC_BASE_URL", model.URL())
	h.Setenv("ANTHROPIC_API_KEY", "sk-ant-fork-0123456789abcdefghijklmnop")
	paddock := newPaddock(h)
	must := mustSucceed(t, paddock)
	must("", "up", repo, "--agent", "claude", "--prompt", "RUN: echo original > /workspace/original.txt")
	pane := func(name string) string {
		return must("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", name)
	}
	firstMessage(t, model, "RUN: echo original")
	waitUntil(t, 60*time.Second, "the first turn to end", func() bool {
		return strings.Contains(must("", "chat", "repo", "--list"), "idle")
	})
	if out, _, _ := paddock("", "exec", "repo", "--", "cat", "/workspace/original.txt"); out != "original\n" {
		t.Fatalf("the first prompt's command did not run: original.txt is %q", out)
	}
	if screen := pane("claude"); !strings.Contains(screen, "RUN: echo original") {
		t.Fatalf("the session's screen lacks its first prompt:\n%s", screen)
	}

	must("", "chat", "repo/claude", "--fork", "alt")
	defer func() {
		if t.Failed() {
			out, errOut, _ := paddock("", "exec", "repo", "--", "tmux", "-S", "/run/paddock/tmux.sock", "capture-pane", "-p", "-t", "alt")
			list, _, _ := paddock("", "chat", "repo", "--list")
			t.Logf("the fork's screen:\n%s%s\nsessions:\n%s", out, errOut, list)
		}
	}()
	waitUntil(t, 60*time.Second, "the fork's prompt", func() bool { return strings.Contains(pane("alt"), "❯") })
	before := len(model.Requests())
	must("only in the fork", "chat", "repo/alt")
	waitUntil(t, 60*time.Second, "the fork's request", func() bool {
		for _, r := range model.Requests()[before:] {
			if r.Contains("only in the fork") {
				if !r.Contains("original.txt") {
					t.Fatal("the fork's request lacks the conversation it was forked from")
				}
				return true
			}
		}
		return false
	})
	list := must("", "chat", "repo", "--list", "--json")
	var sessions []struct {
		Name     string `json:"name"`
		ResumeID string `json:"resume_id"`
	}
	if err := json.Unmarshal([]byte(list), &sessions); err != nil || len(sessions) != 2 || sessions[0].ResumeID == sessions[1].ResumeID {
		t.Fatalf("two sessions with their own conversation ids, got %s", list)
	}
	waitUntil(t, 20*time.Second, "the fork's transcript", func() bool {
		out, _, code := paddock("", "transcript", "repo/alt", "--json")
		return code == 0 && strings.Contains(out, "only in the fork") && strings.Contains(out, "original.txt")
	})
	if orig := must("", "transcript", "repo/claude", "--json"); strings.Contains(orig, "only in the fork") {
		t.Fatal("the original's transcript has what was said in the fork")
	}
	// An agent that cannot fork is refused with the reason, before anything starts.
	must("", "chat", "repo", "--new", "sh", "--agent", "shell", "--command", "sleep 1000")
	if _, errOut, code := paddock("", "chat", "repo/sh", "--fork", "sh2"); code != 2 || !strings.Contains(errOut, "cannot fork") {
		t.Fatalf("forking a shell session: exit %d %s", code, errOut)
	}

	// up on the existing sandbox: another session of Claude Code, with its own first
	// prompt, in a conversation of its own.
	must("", "up", "repo", "--agent", "claude", "--prompt", "RUN: echo second > /workspace/second.txt")
	for _, m := range firstMessage(t, model, "RUN: echo second").Messages {
		if strings.Contains(m.Text, "echo original") {
			t.Fatal("the new session's first request carries another session's conversation")
		}
	}
	if screen := pane("claude-2"); !strings.Contains(screen, "RUN: echo second") {
		t.Fatalf("the new session's screen lacks its first prompt:\n%s", screen)
	}

	// The web UI's new-session form sends its first prompt in the body it posts.
	paths := h.Paths()
	form := `{"name":"web","agent":"claude","prompt":"RUN: echo third > /workspace/third.txt"}`
	if err := client.NewClient(paths.Socket).Do(t.Context(), "POST", "/v1/sandboxes/repo/sessions", strings.NewReader(form), nil); err != nil {
		t.Fatalf("the new-session form's request: %v", err)
	}
	firstMessage(t, model, "RUN: echo third")
}

// firstMessage waits for Claude Code's request whose conversation begins with a user
// message holding text, and returns it.
func firstMessage(t *testing.T, model *modeltest.Anthropic, text string) modeltest.Request {
	t.Helper()
	var found modeltest.Request
	waitUntil(t, 60*time.Second, "a conversation that begins with "+text, func() bool {
		for _, r := range model.Requests() {
			if len(r.Messages) > 0 && r.Messages[0].Role == "user" && strings.Contains(r.Messages[0].Text, text) {
				found = r
				return true
			}
		}
		return false
	})
	return found
}

// nothingInside fails the test when a secret shows anywhere in sandbox repo: in a
// process's environment or a file of the agent's home, /workspace or /tmp. pattern is a
// grep pattern that does not match itself ("e2e-REA[L]"); what names the secret.
func nothingInside(t *testing.T, must func(stdin string, args ...string) string, pattern, what string) {
	t.Helper()
	out := must("", "exec", "repo", "--", "sh", "-c",
		"cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '"+pattern+"' ; grep -rl '"+pattern+"' /home/agent /workspace /tmp 2>/dev/null | wc -l")
	if f := strings.Fields(out); len(f) != 2 || f[0] != "0" || f[1] != "0" {
		t.Fatalf("%s leaked into the sandbox: %q", what, out)
	}
}
