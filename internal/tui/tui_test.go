package tui

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/api/wire/tokens"
)

// lineWith is the screen's line holding text.
func lineWith(screen, text string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, text) {
			return l
		}
	}
	return ""
}

func TestListGroupsByProjectAndFollowsEvents(t *testing.T) {
	f := newFake()
	now := time.Now()
	f.addSandbox("api", "/src/api", "running",
		wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "working", LastActivity: now.Add(-3 * time.Minute)},
		wire.SessionInfo{Name: "docs", Agent: "codex", Status: "idle"})
	f.addSandbox("web", "/src/web", "running", wire.SessionInfo{Name: "ui", Agent: "gemini", Status: "waiting"})
	f.transcript["api/fix-auth"] = []wire.TranscriptEntry{
		{Kind: wire.EntryUser, Text: "make login faster"},
		// As the daemon's JSON brings it: encoding/json escapes < > & in strings.
		{Kind: wire.EntryToolCall, Tool: "Bash", Input: []byte(`{"command":"go test ./... 2\u003e\u00261 \u0026\u0026 echo ok"}`)},
		{Kind: wire.EntryAssistant, Text: "Looking at the session cache first."},
	}
	f.screens["api/docs:"] = "$ make docs\nbuilt 14 pages\n$ \x1b]0;title\x07\n"
	u := startTUI(t, f, nil, 140, 20)

	s := u.waitFor("fix-auth")
	for _, want := range []string{"api  /src/api", "web  /src/web", "2 sandboxes · 3 sessions", "1 waiting for you"} {
		if !strings.Contains(s, want) {
			t.Errorf("the list lacks %q:\n%s", want, s)
		}
	}
	if l := lineWith(s, "fix-auth           claude"); !strings.Contains(l, "● fix-auth") || !strings.Contains(l, "working") || !strings.Contains(l, "3m") {
		t.Errorf("fix-auth's line lacks its symbol, status or age: %q", l)
	}
	if l := lineWith(s, " ui "); !strings.Contains(l, "◆") || !strings.Contains(l, "waiting for you") {
		t.Errorf("ui's line does not say it waits: %q", l)
	}

	// The preview shows the selected session's conversation.
	u.press("down", "down")
	s = u.waitFor("Looking at the session cache first.")
	if !strings.Contains(s, `Bash {"command":"go test ./... 2>&1 && echo ok"}`) {
		t.Errorf("the preview does not show the tool call as the agent wrote it:\n%s", s)
	}
	// Without a transcript, the preview shows the session's screen, control characters
	// shown, not obeyed.
	u.press("down")
	s = u.waitFor("built 14 pages")
	if !strings.Contains(s, `$ \x1b]0;title\x07`) {
		t.Errorf("the screen's control characters are not shown as text:\n%s", s)
	}
	u.press("up")

	// An event changes the line at once; the line ends with the conversation's last words.
	f.publish(wire.Event{Seq: 7, Time: time.Now(), Sandbox: "api", Session: "fix-auth", Kind: "session-status",
		Detail: "fix-auth is waiting", Attrs: map[string]string{"status": "waiting"}})
	s = u.waitFor("2 waiting for you")
	if l := lineWith(s, "fix-auth           claude"); !strings.Contains(l, "◆") || !strings.Contains(l, "0s  Looking at the sessio") {
		t.Errorf("after the event, fix-auth's line is %q", l)
	}

	// A session whose process ends says how, on its line.
	f.mu.Lock()
	f.sessions["web"][0].Status = "exited"
	f.mu.Unlock()
	f.publish(wire.Event{Seq: 8, Time: time.Now(), Sandbox: "web", Session: "ui", Kind: "session-exited",
		Detail: "ui exited with status 137", Attrs: map[string]string{"exit_status": "137"}})
	s = u.waitFor("ui exited with status")
	if l := lineWith(s, " ui "); !strings.Contains(l, "✕") {
		t.Errorf("the exited session's line is %q", l)
	}

	// A session the daemon reports gone (after an event) leaves the list.
	f.RemoveSession(t.Context(), "api", "docs")
	f.calls = nil
	f.publish(wire.Event{Seq: 9, Sandbox: "api", Session: "docs", Kind: "session-removed", Detail: "docs"})
	u.waitGone("docs ")

	// A sandbox whose agent went for its own controls is marked, after the alarm's event.
	f.mu.Lock()
	web := f.sandboxes["web"]
	web.Alarms = 1
	f.sandboxes["web"] = web
	f.mu.Unlock()
	f.publish(wire.Event{Seq: 10, Time: time.Now(), Sandbox: "web", Kind: "alarm",
		Detail: "control file changed: /workspace/.git/hooks/post-merge (a git hook)", Attrs: map[string]string{"alarm": "control-file"}})
	s = u.waitFor("⚠ ALARM")
	if l := lineWith(s, "⚠ ALARM"); !strings.Contains(l, "web") || !strings.Contains(l, "running") {
		t.Errorf("the alarm's mark is on %q", l)
	}

	// Folding a project hides its sandboxes.
	u.press("home", "space")
	s = u.waitGone("fix-auth")
	if !strings.Contains(s, "▸ api") {
		t.Errorf("the folded project is not marked:\n%s", s)
	}
	u.press("space")
	u.waitFor("fix-auth")
}

func TestFilterKeepsMatchingSessions(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running",
		wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "working"},
		wire.SessionInfo{Name: "docs", Agent: "codex", Status: "idle"})
	u := startTUI(t, f, nil, 120, 16)
	u.waitFor("docs")
	u.press("/")
	u.typeText("codex")
	s := u.waitGone("fix-auth")
	if !strings.Contains(s, "docs") {
		t.Fatalf("the filter hid the matching session:\n%s", s)
	}
	u.press("esc")
	u.waitFor("fix-auth")
}

// TestPreviewOfAStartingSession: a session whose agent has written no conversation yet
// is previewed as having none, not with the daemon's "no transcript" error.
func TestPreviewOfAStartingSession(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fresh", Agent: "claude", Status: "starting"})
	u := startTUI(t, f, nil, 120, 16)
	u.waitFor("fresh")
	u.press("down", "down")
	s := u.waitFor("(no conversation yet)")
	if strings.Contains(s, "no transcript") {
		t.Errorf("the preview of a starting session reads as an error:\n%s", s)
	}
}

// TestRestartOfASessionTheStartResumes: R on a session of a stopped sandbox that was
// running when it stopped starts the sandbox, which resumes the session: no restart of
// its own (which the daemon would refuse, the session running).
func TestRestartOfASessionTheStartResumes(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "stopped", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "stopped"})
	u := startTUI(t, f, nil, 120, 16)
	u.waitFor("stopped")
	u.press("down", "down", "R")
	u.waitFor("api started, resumed fix-auth")
	if calls := f.callLog(); !slices.Equal(calls, []string{"start api"}) {
		t.Errorf("calls %q, want only the start", calls)
	}
}

func TestRestartStartsAStoppedSandboxThenResumes(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "stopped", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "exited"})
	u := startTUI(t, f, nil, 120, 16)
	u.waitFor("stopped")
	u.press("down", "down", "R")
	waitCalls(t, f, "start api", "restart api/fix-auth")
	u.waitFor("api/fix-auth resumed")
	// The list's next read shows it working; the line of the moment may come first.
	u.waitScreen("the session shown working after R", func(s string) bool {
		return strings.Contains(lineWith(s, "fix-auth "), "working")
	})
	// The status moves on; nothing on the screen still says the one of the moment R ran.
	f.publish(wire.Event{Seq: 3, Time: time.Now(), Sandbox: "api", Session: "fix-auth", Kind: "session-status",
		Detail: "fix-auth is idle", Attrs: map[string]string{"status": "idle"}})
	s := u.waitFor("idle")
	if strings.Contains(s, "resumed: working") {
		t.Errorf("after the session went idle, the info line still gives its old status:\n%s", s)
	}
}

func TestSlowCallShowsSpinnerAndFailureShowsError(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "exited"})
	f.gate = make(chan struct{})
	f.failRestart = errors.New("the agent did not come back")
	u := startTUI(t, f, nil, 120, 16)
	u.waitFor("fix-auth")
	time.Sleep(300 * time.Millisecond) // idle: the spinner has stopped turning by now
	u.press("down", "down", "R")
	first := lineWith(u.waitFor("restarting api/fix-auth…"), "restarting")
	// The spinner turns while the call is held.
	u.waitScreen("the spinner to turn", func(s string) bool {
		l := lineWith(s, "restarting")
		return l != "" && l != first
	})
	// The screen still answers while the call hangs.
	u.press("?")
	u.waitFor("paddock: keys")
	u.press("q")
	u.waitGone("paddock: keys")
	close(f.gate)
	u.waitFor("✕ restart api/fix-auth: the agent did not come back")
}

func TestStopAndDeleteAskFirst(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "idle"})
	u := startTUI(t, f, nil, 160, 16)
	u.waitFor("fix-auth")

	u.press("down", "down", "d")
	u.waitFor("Delete session api/fix-auth? Its process ends")
	u.press("n")
	u.waitFor("cancelled")
	u.press("up", "x")
	u.waitFor("Stop api? Its 1 session(s) end")
	u.press("y")
	u.waitFor("api stopped")
	u.press("d")
	u.waitFor("Delete sandbox api? A final snapshot is taken first, for `paddock restore` to bring it back; its 1 session(s) end.")
	u.press("y")
	u.waitFor("deleted api; `paddock restore 20260101T000000Z-abcdef` brings it back")
	u.waitFor("No sandboxes yet")
	waitCalls(t, f, "stop api", "rm api force=true purge=false")
}

func TestMessageSendsOneLine(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "waiting"})
	u := startTUI(t, f, nil, 120, 16)
	u.waitFor("fix-auth")
	u.press("down", "down", "m")
	u.waitFor("message to api/fix-auth:")
	u.typeText("yes, go on")
	u.press("enter")
	waitCalls(t, f, `send api/fix-auth "yes, go on"`)
	u.waitFor("sent to api/fix-auth")
}

func TestForkNamesTheCopy(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "idle"},
		wire.SessionInfo{Name: "fix-auth-fork", Agent: "claude", Status: "idle"})
	u := startTUI(t, f, nil, 120, 16)
	u.waitFor("fix-auth-fork")
	u.press("down", "down", "f")
	waitCalls(t, f, "create-session api/fix-auth-fork2 fork_of=fix-auth")
	u.waitFor("forked api/fix-auth into api/fix-auth-fork2")
	u.press("up", "f")
	u.waitFor("select a session to fork")
}

func TestSyncAndDiffShowWhatArrived(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "idle"})
	cmds := &commandLog{scripts: map[string]string{
		"sync": "echo 'refs/paddock/api/main: 2 commit(s), 3 file(s)'",
		"diff": "printf 'diff --git a/x b/x\\n+hello\\n'",
	}}
	u := startTUI(t, f, cmds, 120, 16)
	u.waitFor("fix-auth")
	u.press("down", "s")
	u.waitFor("refs/paddock/api/main: 2 commit(s), 3 file(s)")
	u.press("q", "D")
	u.waitFor("+hello")
	u.press("q")
	u.waitFor("fix-auth")
	if got := cmds.log(); !slices.Equal(got, []string{"sync api", "diff api"}) {
		t.Fatalf("commands run: %q", got)
	}
}

func TestAttachRunsChatAndComesBack(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "idle"},
		wire.SessionInfo{Name: "old", Agent: "claude", Status: "exited"})
	cmds := &commandLog{}
	u := startTUI(t, f, cmds, 120, 16)
	u.waitFor("fix-auth")
	u.press("down", "down", "enter")
	u.waitFor("detached from api/fix-auth")
	u.press("down", "enter")
	u.waitFor("api/old has exited: press R to resume it")
	if got := cmds.log(); !slices.Equal(got, []string{"chat api/fix-auth"}) {
		t.Fatalf("commands run: %q", got)
	}
}

// gitRepo makes a repository on branch.
func gitRepo(t *testing.T, branch string) string {
	dir := filepath.Join(t.TempDir(), "shop")
	for _, args := range [][]string{{"init", "-q", "-b", branch, dir}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

func doctorWith(dockerOK, runsc bool) wire.Doctor {
	docker := wire.BackendReport{Name: "docker", Available: dockerOK, Reason: "no engine answers", Fix: "start dockerd",
		Isolation: wire.IsolationContainer, Preference: 2}
	if runsc {
		docker.Runtimes = []wire.RuntimeReport{{Name: "runsc", Available: true, Isolation: wire.IsolationUserKernel}}
	}
	return wire.Doctor{
		Backends: []wire.BackendReport{{Name: "bwrap", Available: true, Default: true, HostSystem: true, Isolation: wire.IsolationNamespaces, Preference: 1}, docker},
		Agents: []wire.AgentReport{{Name: "claude", Available: true, Disposable: true}, {Name: "codex", Available: true, Disposable: true},
			{Name: "gemini", Available: false, Install: "npm install -g @google/gemini-cli"}, {Name: "shell", Available: true}},
	}
}

func TestDialogRefusesWhatCannotWork(t *testing.T) {
	f := newFake()
	f.doctor = doctorWith(false, false)
	repo := gitRepo(t, "feature/login")
	u := startTUI(t, f, nil, 130, 30)
	u.waitFor("No sandboxes yet")
	u.press("n")
	u.waitFor("New session")
	u.press("ctrl+u")
	u.typeText(filepath.Dir(repo))
	u.waitFor("is not a git repository")
	u.typeText("/shop")
	s := u.waitFor("will create sandbox shop on bwrap, then start claude in shop/feature-login")
	if !strings.Contains(s, "feature-login") {
		t.Errorf("the session name is not suggested from the branch:\n%s", s)
	}
	// docker is down: choosing it is refused with doctor's reason.
	u.press("down", "down", "right")
	u.waitFor("backend docker is not available: no engine answers start dockerd")
	u.press("left", "down", "right", "right")
	u.waitFor("agent gemini is not installed (a bwrap sandbox runs the host's /usr): npm install -g @google/gemini-cli")
	u.press("ctrl+s")
	time.Sleep(100 * time.Millisecond)
	u.waitFor("New session")
	// An invalid name is refused too.
	u.press("right", "down", "ctrl+u")
	u.typeText("bad name")
	u.waitFor("session name: choose letters")
	if calls := f.callLog(); len(calls) != 0 {
		t.Fatalf("the dialog made something: %q", calls)
	}
}

func TestDialogCreatesSandboxAndSession(t *testing.T) {
	f := newFake()
	f.doctor = doctorWith(true, true)
	repo := gitRepo(t, "main")
	cmds := &commandLog{}
	u := startTUI(t, f, cmds, 130, 30)
	u.waitFor("No sandboxes yet")
	u.press("n")
	u.waitFor("New session")
	u.press("ctrl+u")
	u.typeText(repo)
	u.waitFor("will create sandbox shop on bwrap")
	// Just do it: docker under runsc, said why.
	for range 7 {
		u.press("down")
	}
	u.press("space")
	s := u.waitFor("will create sandbox shop on docker under runsc")
	if !strings.Contains(s, "picked docker under runsc (user-space kernel): the strongest isolation here that is not") {
		t.Errorf("Just do it does not say why it chose the backend:\n%s", s)
	}
	// The daemon's sandbox appears once up has run (the fake up adds it).
	cmds.mu.Lock()
	cmds.onRun = func(args []string) {
		if args[0] == "up" {
			f.addSandbox("shop", repo, "running")
		}
	}
	cmds.mu.Unlock()
	u.press("ctrl+s")
	u.waitFor("started shop/main")
	want := "up " + repo + " --name shop --backend docker --network closed --runtime runsc"
	if got := cmds.log(); !slices.Equal(got, []string{want}) {
		t.Fatalf("commands run: %q, want %q", got, want)
	}
	waitCalls(t, f, "create-session shop/main agent=claude worktree= disposable=true")
	u.waitFor("main ")
}

func TestDialogCompletesThePath(t *testing.T) {
	f := newFake()
	f.doctor = doctorWith(true, false)
	base := t.TempDir()
	os.Mkdir(filepath.Join(base, "projects"), 0o755)
	u := startTUI(t, f, nil, 130, 30)
	u.waitFor("No sandboxes yet")
	u.press("n", "ctrl+u")
	u.typeText(base + "/pro")
	u.press("tab")
	u.waitFor(base + "/projects/")
}

func TestMouseSelects(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "idle"},
		wire.SessionInfo{Name: "docs", Agent: "claude", Status: "idle"})
	f.transcript["api/docs"] = []wire.TranscriptEntry{{Kind: wire.EntryAssistant, Text: "The docs are rebuilt."}}
	u := startTUI(t, f, nil, 120, 16)
	u.waitFor("docs")
	// The list starts on the screen's second line: rows project, sandbox, fix-auth, docs.
	u.tm.Send(tea.MouseClickMsg{X: 8, Y: 4, Button: tea.MouseLeft})
	u.waitFor("The docs are rebuilt.")
	// A second click on a project line folds it.
	u.tm.Send(tea.MouseClickMsg{X: 4, Y: 1, Button: tea.MouseLeft})
	u.tm.Send(tea.MouseClickMsg{X: 4, Y: 1, Button: tea.MouseLeft})
	u.waitGone("fix-auth")
}

func TestDialogStartsInAWorktreeOfAnExistingSandbox(t *testing.T) {
	f := newFake()
	f.doctor = doctorWith(true, false)
	repo := gitRepo(t, "main")
	f.addSandbox("shop", repo, "running", wire.SessionInfo{Name: "main", Agent: "claude", Status: "idle"})
	cmds := &commandLog{}
	u := startTUI(t, f, cmds, 130, 30)
	u.waitFor("main ")
	u.press("n")
	u.waitFor("New session")
	u.press("ctrl+u")
	u.typeText(repo)
	u.press("down", "right")
	// The branch's name is taken in that sandbox: the suggestion moves on.
	u.waitFor("will start claude in shop/main-2")
	u.press("down", "right") // agent: codex
	u.press("down", "down", "space")
	u.waitFor("[x] its own worktree")
	// A first prompt: the agent starts working on it at once.
	u.press("down", "down")
	u.typeText("fix the flaky test")
	u.waitFor("will start codex in shop/main-2, at work on its first prompt")
	u.press("ctrl+s")
	u.waitFor("started shop/main-2")
	if got := cmds.log(); !slices.Equal(got, []string{"worktree add shop main-2"}) {
		t.Fatalf("commands run: %q", got)
	}
	waitCalls(t, f, "exec shop: command -v claude", "exec shop: command -v codex", "create-session shop/main-2 agent=codex worktree=main-2 disposable=false",
		`create-session shop/main-2 prompt="fix the flaky test"`)
}

func TestDialogRefusesAnAgentMissingInTheSandbox(t *testing.T) {
	f := newFake()
	f.doctor = doctorWith(true, false)
	repo := gitRepo(t, "main")
	f.addSandbox("shop", repo, "running")
	f.mu.Lock()
	f.sandboxes["shop"] = wire.SandboxInfo{Name: "shop", Backend: "docker", State: "running", SourcePath: repo}
	f.missing["shop/codex"] = true
	f.mu.Unlock()
	u := startTUI(t, f, nil, 130, 30)
	u.waitFor("shop running")
	u.press("n", "ctrl+u")
	u.typeText(repo)
	u.press("down", "right")
	u.waitFor("will start claude in shop/main")
	u.press("down", "right")
	u.waitFor("✕ agent codex is not installed in shop (no \"codex\" on its PATH)")
	u.press("ctrl+s")
	time.Sleep(100 * time.Millisecond)
	u.waitFor("New session")
	waitCalls(t, f, "exec shop: command -v claude", "exec shop: command -v codex")
}

func TestEventStreamResumesAfterTheDaemonCutsIt(t *testing.T) {
	f := newFake()
	f.cut = make(chan struct{})
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "working"})
	u := startTUI(t, f, nil, 140, 16)
	u.waitFor("fix-auth")
	f.publish(wire.Event{Seq: 41, Time: time.Now(), Sandbox: "api", Session: "fix-auth", Kind: "session-status", Attrs: map[string]string{"status": "idle"}})
	u.waitScreen("fix-auth idle", func(s string) bool { return strings.Contains(lineWith(s, "fix-auth           claude"), "idle") })
	f.mu.Lock()
	close(f.cut)
	f.cut = make(chan struct{})
	f.mu.Unlock()
	u.waitFor("✕ events: the daemon ended the event stream: it has stopped, or restarted (reconnecting)")
	// It comes back after the last event it saw, and follows again.
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		streams := slices.Clone(f.streams)
		f.mu.Unlock()
		if len(streams) == 2 {
			if streams[1] != "41" {
				t.Fatalf("the stream resumed with since=%q, want 41", streams[1])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream was not opened again: %q", streams)
		}
		time.Sleep(20 * time.Millisecond)
	}
	u.waitFor("reconnected to the daemon")
	f.publish(wire.Event{Seq: 42, Time: time.Now(), Sandbox: "api", Session: "fix-auth", Kind: "session-status", Attrs: map[string]string{"status": "waiting"}})
	u.waitFor("1 waiting for you")
}

// TestRunsBesideSessions: a sandbox's runs of paddock's own agent are listed under its
// sessions, live: the preview shows a run's steps, x cancels one at work, and an event
// brings its new status.
func TestRunsBesideSessions(t *testing.T) {
	f := newFake()
	now := time.Now()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix-auth", Agent: "claude", Status: "idle"})
	f.runs["api"] = []wire.Run{
		{ID: "r00000000a2", Sandbox: "api", Title: "make the tests pass", Status: "running", Model: "claude-test", Updated: now,
			Usage: wire.Usage{Turns: 2, ToolCalls: 1}},
		{ID: "r00000000a1", Sandbox: "api", Title: "an older run", Status: "done", Updated: now.Add(-time.Hour)},
	}
	f.steps["r00000000a2"] = []wire.RunStep{
		{Kind: "prompt", Input: "make the tests pass"},
		{Kind: "turn", Output: "Running the tests."},
		{Kind: "tool", Name: "run_command", Input: `{"command":"go test ./..."}`, Output: "--- FAIL: TestLogin\nFAIL\n[exit code 1, 2s]", IsError: true},
	}
	u := startTUI(t, f, nil, 140, 20)
	s := u.waitFor("run r00000000a2")
	if l := lineWith(s, "run r00000000a2"); !strings.Contains(l, "running") || !strings.Contains(l, "make the tests pass") {
		t.Errorf("the run's line: %q", l)
	}
	if l := lineWith(s, "run r00000000a1"); !strings.Contains(l, "done") {
		t.Errorf("the older run's line: %q", l)
	}
	u.press("down", "down", "down")
	s = u.waitFor("✗ run_command")
	for _, want := range []string{"api run r00000000a2", "2 turns · 1 tool calls", "> make the tests pass", "Running the tests.", "[exit code 1, 2s]"} {
		if !strings.Contains(s, want) {
			t.Errorf("the run's preview lacks %q:\n%s", want, s)
		}
	}
	u.press("x")
	u.waitFor("Cancel run r00000000a2?")
	u.press("y")
	u.waitFor("run r00000000a2 cancelled")
	if !slices.Contains(f.callLog(), "cancel-run r00000000a2") {
		t.Errorf("calls: %v", f.callLog())
	}
	f.publish(wire.Event{Seq: 3, Sandbox: "api", Kind: "run-finished", Detail: "run r00000000a2 cancelled"})
	s = u.waitFor("✕ run r00000000a2")
	if l := lineWith(s, "run r00000000a2"); !strings.Contains(l, "cancelled") {
		t.Errorf("after the event, the run's line is %q", l)
	}
}

// TestJustDoItPrefersAVM: with a backend whose sandboxes are VMs of their own available,
// "Just do it" picks it over docker under gVisor, and says why; without one (a Vagrant on
// its docker provider is a container), gVisor it is; a VM emulated here (a microVM
// without KVM) is never picked, and the dialog's warning says what it would cost.
func TestJustDoItPrefersAVM(t *testing.T) {
	for _, c := range []struct {
		vm             bool
		want, wantWarn string
	}{
		{true, "picked vagrant (vm): the strongest isolation here that is not emulated", ""},
		{false, "picked docker under runsc (user-space kernel)", ""},
	} {
		backends := doctorWith(true, true).Backends
		tier := wire.IsolationContainer
		if c.vm {
			tier = wire.IsolationVM
		}
		backends = append(backends, wire.BackendReport{Name: "vagrant", Available: true, VM: c.vm, Isolation: tier})
		if name, _, why, warn := chooseJustDoIt(backends); !strings.HasPrefix(why, c.want) || (c.vm && name != "vagrant") || warn != "" {
			t.Errorf("VM %v: Just do it chose %s: %q (warning %q)", c.vm, name, why, warn)
		}
	}
	unavailable := append(doctorWith(true, false).Backends, wire.BackendReport{Name: "vagrant", Available: false, VM: true, Isolation: wire.IsolationVM})
	if name, _, _, _ := chooseJustDoIt(unavailable); name != "docker" {
		t.Errorf("an unavailable VM backend was chosen: %s", name)
	}
	slowVM := wire.BackendReport{Name: "microvm", Available: true, VM: true, Isolation: wire.IsolationVM, Emulated: true,
		Slow: "no KVM (/dev/kvm: no such file or directory): QEMU emulates the processor, about 100 s to start a sandbox"}
	name, runtime, why, warn := chooseJustDoIt(append(doctorWith(true, true).Backends, slowVM))
	if name != "docker" || runtime != "runsc" || !strings.Contains(why, "not emulated") {
		t.Errorf("with an emulated VM here, Just do it chose %s/%s: %q", name, runtime, why)
	}
	if !strings.Contains(warn, "microvm (vm) is here but emulated: no KVM") || !strings.Contains(warn, "about 100 s to start") ||
		!strings.Contains(warn, "choose it as the backend") {
		t.Errorf("the warning about the emulated VM is %q", warn)
	}
	// Only an emulated backend: nothing is picked, and the refusal says why.
	if name, _, _, warn := chooseJustDoIt([]wire.BackendReport{slowVM}); name != "" || !strings.Contains(warn, "only emulated backends are here") {
		t.Errorf("with only an emulated VM, Just do it chose %q (%q)", name, warn)
	}
}

// TestDialogWarnsOfAnEmulatedVM: where a microVM would be emulated (no KVM), Just do it
// picks docker under gVisor and the dialog says what the VM would cost, and how to have
// it anyway.
func TestDialogWarnsOfAnEmulatedVM(t *testing.T) {
	f := newFake()
	f.doctor = doctorWith(true, true)
	f.doctor.Backends = append(f.doctor.Backends, wire.BackendReport{Name: "microvm", Available: true, VM: true,
		Isolation: wire.IsolationVM, Emulated: true, Slow: "no KVM: QEMU emulates the processor, about 100 s to start a sandbox"})
	repo := gitRepo(t, "main")
	u := startTUI(t, f, nil, 130, 30)
	u.waitFor("No sandboxes yet")
	u.press("n")
	u.waitFor("New session")
	u.press("ctrl+u")
	u.typeText(repo)
	u.waitFor("will create sandbox shop on bwrap")
	for range 7 {
		u.press("down")
	}
	u.press("space")
	u.waitFor("will create sandbox shop on docker under runsc")
	u.waitFor("microvm (vm) is here but emulated: no KVM: QEMU emulates the processor, about 100 s to")
	u.waitFor("untick Just do it and choose it as the backend")
}

// TestCostFollowsUsage: a model call's usage event shows the sandbox's estimated cost on
// its line, and the sandbox's and session's figures in the preview.
func TestCostFollowsUsage(t *testing.T) {
	f := newFake()
	f.addSandbox("api", "/src/api", "running", wire.SessionInfo{Name: "fix", Agent: "claude", Status: "working"})
	u := startTUI(t, f, nil, 140, 20)
	s := u.waitFor("fix")
	if l := lineWith(s, "api running"); strings.Contains(l, "$") {
		t.Errorf("a sandbox without model calls shows a cost: %q", l)
	}
	spent := &wire.UsageSum{Requests: 3, CostUSD: 0.42,
		Usage: tokens.Usage{InputTokens: 1000, CacheReadTokens: 200, OutputTokens: 300}}
	f.mu.Lock()
	sb := f.sandboxes["api"]
	sb.Usage = spent
	f.sandboxes["api"] = sb
	f.sessions["api"][0].Usage = spent
	f.mu.Unlock()
	f.publish(wire.Event{Seq: 3, Time: time.Now(), Sandbox: "api", Session: "fix", Kind: "usage", Detail: "claude-sonnet-4-5"})
	s = u.waitFor("~$0.42")
	if l := lineWith(s, "api running"); !strings.Contains(l, "~$0.42") {
		t.Errorf("the sandbox's line lacks its cost: %q", l)
	}
	u.press("down", "down") // the project, the sandbox, the session
	// The sandbox's preview says "3 calls" too, under "cost" padded: wait for the session's.
	s = u.waitFor("cost ~$0.42 (estimate; 3 calls")
	if l := lineWith(s, "cost ~$0.42"); !strings.Contains(l, "estimate; 3 calls, 1200 tokens in, 300 out") {
		t.Errorf("the session's preview lacks its usage:\n%s", s)
	}
}
