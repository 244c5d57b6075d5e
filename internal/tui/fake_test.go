package tui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/charmbracelet/x/vt"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/session"
)

// fakeDaemon stands in for the daemon at the TUI's seam. It keeps sandboxes and sessions
// as the daemon would (a stopped sandbox has no live sessions; restarting a session of a
// stopped sandbox is refused, as the real one refuses it), streams the events the test
// publishes, and records every call in order.
type fakeDaemon struct {
	mu         sync.Mutex
	sandboxes  map[string]wire.SandboxInfo
	sessions   map[string][]wire.SessionInfo
	transcript map[string][]wire.TranscriptEntry
	// screens are what sessions' panes show, by "sandbox/session:" (capture-pane's target).
	screens map[string]string
	// missing are the programs not on a sandbox's PATH, by "sandbox/program".
	missing map[string]bool
	doctor  wire.Doctor
	calls   []string
	events  chan wire.Event
	// gate, when set, holds every call that changes something until it is closed.
	gate chan struct{}
	// failRestart makes RestartSession fail with it.
	failRestart error
	// cut, when closed, ends the event streams open at that time, as a daemon restart does;
	// streams records each stream's since.
	cut     chan struct{}
	streams []string
	// runs are each sandbox's runs, newest first; steps each run's steps.
	runs  map[string][]wire.Run
	steps map[string][]wire.RunStep
	// tasks and queue are the daemon's tasks and merge queue (tasks_test.go); runsOnHost,
	// when set, is what a landing without yes is refused for.
	tasks      []wire.Task
	queue      []wire.QueueEntry
	runsOnHost string
	// checkpoints are each sandbox's checkpoints, oldest first; cpDiffs the stat and diff
	// of each "SANDBOX FROM..TO" (timeline_test.go).
	checkpoints map[string][]wire.Checkpoint
	cpDiffs     map[string][2]string
}

func newFake() *fakeDaemon {
	return &fakeDaemon{sandboxes: map[string]wire.SandboxInfo{}, sessions: map[string][]wire.SessionInfo{},
		transcript: map[string][]wire.TranscriptEntry{}, screens: map[string]string{}, missing: map[string]bool{}, events: make(chan wire.Event, 1024),
		runs: map[string][]wire.Run{}, steps: map[string][]wire.RunStep{}}
}

func (f *fakeDaemon) addSandbox(name, project, state string, sessions ...session.Info) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sandboxes[name] = wire.SandboxInfo{Name: name, Backend: "bwrap", State: state, SourcePath: project, Network: "closed", SyncMode: "manual"}
	for i := range sessions {
		sessions[i].Sandbox = name
	}
	f.sessions[name] = sessions
}

func (f *fakeDaemon) Runs(ctx context.Context, sb string) ([]wire.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sb != "" {
		return slices.Clone(f.runs[sb]), nil
	}
	var out []wire.Run
	for _, rs := range f.runs {
		out = append(out, rs...)
	}
	return out, nil
}

func (f *fakeDaemon) Run(ctx context.Context, id string) (wire.RunDetail, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rs := range f.runs {
		for _, r := range rs {
			if r.ID == id {
				return wire.RunDetail{Run: r, Steps: slices.Clone(f.steps[id])}, nil
			}
		}
	}
	return wire.RunDetail{}, apperr.NotFound("", "no such run %q", id)
}

// CancelRun cancels a running run, as the daemon does, and refuses any other.
func (f *fakeDaemon) CancelRun(ctx context.Context, id string) (wire.Run, error) {
	f.record("cancel-run %s", id)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rs := range f.runs {
		for i := range rs {
			if rs[i].ID == id {
				if rs[i].Status != "running" {
					return rs[i], apperr.Conflict("", "run %s is not at work (%s)", id, rs[i].Status)
				}
				rs[i].Status = "cancelled"
				return rs[i], nil
			}
		}
	}
	return wire.Run{}, apperr.NotFound("", "no such run %q", id)
}

func (f *fakeDaemon) record(format string, args ...any) {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
}

func (f *fakeDaemon) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeDaemon) List(ctx context.Context) ([]wire.SandboxInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []wire.SandboxInfo
	for _, sb := range f.sandboxes {
		out = append(out, sb)
	}
	return out, nil
}

func (f *fakeDaemon) Get(ctx context.Context, name string) (wire.SandboxInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb, ok := f.sandboxes[name]
	if !ok {
		return wire.SandboxInfo{}, apperr.NotFound("", "no sandbox named %q", name)
	}
	return sb, nil
}

func (f *fakeDaemon) Sessions(ctx context.Context, name string) ([]wire.SessionInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb, ok := f.sandboxes[name]
	if !ok {
		return nil, apperr.NotFound("", "no sandbox named %q", name)
	}
	out := append([]wire.SessionInfo(nil), f.sessions[name]...)
	if sb.State != "running" {
		// As the daemon answers: the sessions are there, their processes are not; those
		// that ran when the sandbox stopped are stopped (start resumes them).
		for i := range out {
			if out[i].Status == "exited" {
				out[i].Detail = "the sandbox is not running"
			} else {
				out[i].Status, out[i].Detail = "stopped", "its sandbox is stopped"
			}
		}
	}
	return out, nil
}

func (f *fakeDaemon) Events(ctx context.Context, q wire.EventsQuery, fn func(wire.Event) error) error {
	f.mu.Lock()
	f.streams = append(f.streams, q.Since)
	cut := f.cut
	f.mu.Unlock()
	for {
		select {
		case <-cut:
			return errors.New("the daemon ended the event stream: it has stopped, or restarted")
		case <-ctx.Done():
			return nil
		case ev := <-f.events:
			if err := fn(ev); err != nil {
				return err
			}
		}
	}
}

// publish changes the state as the daemon would and streams the event.
func (f *fakeDaemon) publish(ev wire.Event) {
	f.mu.Lock()
	if ev.Kind == "session-status" {
		for i, s := range f.sessions[ev.Sandbox] {
			if s.Name == ev.Session {
				f.sessions[ev.Sandbox][i].Status = ev.Attrs["status"]
			}
		}
	}
	f.mu.Unlock()
	f.events <- ev
}

func (f *fakeDaemon) Transcript(ctx context.Context, sb, name string) ([]wire.TranscriptEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	entries, ok := f.transcript[sb+"/"+name]
	if !ok {
		// As the daemon answers for a session whose agent has written none yet.
		return nil, apperr.NotFound("", "session %q has no transcript paddock can read (agent claude)", name)
	}
	return entries, nil
}

func (f *fakeDaemon) Start(ctx context.Context, name string) (wire.SandboxInfo, error) {
	f.record("start %s", name)
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[name]
	sb.State = "running"
	f.sandboxes[name] = sb
	// As the daemon does: every session but one that had exited is resumed.
	for i, se := range f.sessions[name] {
		if se.Status != "exited" {
			f.sessions[name][i].Status = "running"
			sb.Resumed = append(sb.Resumed, se.Name)
		}
	}
	return sb, nil
}

func (f *fakeDaemon) Stop(ctx context.Context, name string) (wire.SandboxInfo, error) {
	f.record("stop %s", name)
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[name]
	sb.State = "stopped"
	f.sandboxes[name] = sb
	for i := range f.sessions[name] {
		if f.sessions[name][i].Status != "exited" {
			f.sessions[name][i].Status = "stopped"
		}
	}
	return sb, nil
}

func (f *fakeDaemon) Remove(ctx context.Context, name string, req wire.RemoveRequest, progress func(string)) (*wire.SnapshotManifest, error) {
	f.record("rm %s force=%v purge=%v", name, req.Force, req.Purge)
	f.mu.Lock()
	defer f.mu.Unlock()
	sb, ok := f.sandboxes[name]
	if !ok {
		return nil, apperr.NotFound("", "no sandbox named %q", name)
	}
	delete(f.sandboxes, name)
	delete(f.sessions, name)
	if req.Purge || sb.State == "lost" {
		return nil, nil
	}
	return &wire.SnapshotManifest{ID: "20260101T000000Z-abcdef", Sandbox: name}, nil
}

func (f *fakeDaemon) RemoveSession(ctx context.Context, sb, name string) error {
	f.record("rm-session %s/%s", sb, name)
	f.mu.Lock()
	defer f.mu.Unlock()
	list := f.sessions[sb]
	for i, s := range list {
		if s.Name == name {
			f.sessions[sb] = append(list[:i:i], list[i+1:]...)
		}
	}
	return nil
}

func (f *fakeDaemon) RestartSession(ctx context.Context, sb, name string) (wire.SessionInfo, error) {
	f.record("restart %s/%s", sb, name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failRestart != nil {
		return wire.SessionInfo{}, f.failRestart
	}
	if f.sandboxes[sb].State != "running" {
		return wire.SessionInfo{}, apperr.Conflict("", "sandbox %q is not running", sb)
	}
	for i, s := range f.sessions[sb] {
		if s.Name == name {
			f.sessions[sb][i].Status = "working"
			return f.sessions[sb][i], nil
		}
	}
	return wire.SessionInfo{}, apperr.NotFound("", "no session %q", name)
}

func (f *fakeDaemon) SendToSession(ctx context.Context, sb, name, text string) error {
	f.record("send %s/%s %q", sb, name, text)
	return nil
}

func (f *fakeDaemon) CreateSession(ctx context.Context, sb string, req wire.SessionCreateRequest, wait time.Duration) (wire.SessionInfo, error) {
	if req.ForkOf != "" {
		f.record("create-session %s/%s fork_of=%s", sb, req.Name, req.ForkOf)
	} else {
		f.record("create-session %s/%s agent=%s worktree=%s disposable=%t", sb, req.Name, req.Agent, req.Worktree, req.Disposable)
	}
	if req.Prompt != "" {
		f.record("create-session %s/%s prompt=%q", sb, req.Name, req.Prompt)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sandboxes[sb].State != "running" {
		return wire.SessionInfo{}, apperr.Conflict("", "sandbox %q is not running", sb)
	}
	info := wire.SessionInfo{Sandbox: sb, Name: req.Name, Agent: req.Agent, Status: "starting"}
	f.sessions[sb] = append(f.sessions[sb], info)
	return info, nil
}

func (f *fakeDaemon) WriteFile(ctx context.Context, name, p string, mode uint32, r io.Reader) error {
	data, _ := io.ReadAll(r)
	f.record("write %s:%s %d bytes", name, p, len(data))
	return nil
}

func (f *fakeDaemon) Doctor(ctx context.Context) (wire.Doctor, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.doctor, nil
}

func (f *fakeDaemon) Exec(ctx context.Context, name string, req wire.ExecRequest, eio wire.ExecIO) (int, error) {
	if slices.Equal(req.Argv[:4], []string{"sh", "-c", `command -v "$1" >/dev/null`, "sh"}) {
		f.record("exec %s: command -v %s", name, req.Argv[4])
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.missing[name+"/"+req.Argv[4]] {
			return 1, nil
		}
		return 0, nil
	}
	f.mu.Lock()
	screen, ok := f.screens[name+"/"+strings.TrimPrefix(req.Argv[len(req.Argv)-1], "=")]
	f.mu.Unlock()
	if !slices.Equal(req.Argv[:len(req.Argv)-1], []string{"tmux", "-S", wire.SessionSocket, "capture-pane", "-p", "-t"}) || !ok {
		return 1, nil
	}
	io.WriteString(eio.Stdout, screen)
	return 0, nil
}

// commandLog records the paddock command lines the TUI runs; each runs `sh -c SCRIPT`,
// the script chosen by the command's first word (default: true).
type commandLog struct {
	mu      sync.Mutex
	lines   []string
	scripts map[string]string
	// onRun, when set, is called with each command line before it runs (a fake up adds
	// its sandbox to the fake daemon, as the real one makes it).
	onRun func(args []string)
}

func (c *commandLog) command(ctx context.Context, args ...string) *exec.Cmd {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, strings.Join(args, " "))
	if c.onRun != nil {
		c.onRun(args)
	}
	script := c.scripts[args[0]]
	if script == "" {
		script = "true"
	}
	return exec.CommandContext(ctx, "sh", "-c", script)
}

func (c *commandLog) log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// tui runs the model as a program whose output goes to a terminal emulator, so tests read
// the screen a user would see.
type tui struct {
	t    *testing.T
	tm   *teatest.TestModel
	term *vt.SafeEmulator
	m    *Model
}

func startTUI(t *testing.T, d Daemon, cmds *commandLog, w, h int) *tui {
	t.Helper()
	if cmds == nil {
		cmds = &commandLog{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m := New(ctx, Options{Daemon: d, Command: cmds.command, Cwd: t.TempDir()})
	term := vt.NewSafeEmulator(w, h)
	go io.Copy(io.Discard, term) // the emulator's answers to queries
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	t.Cleanup(func() {
		tm.Quit()
		m.Close()
	})
	return &tui{t: t, tm: tm, term: term, m: m}
}

// screen is what the terminal shows now.
func (u *tui) screen() string {
	out, _ := io.ReadAll(u.tm.Output())
	// A terminal's output processing turns each newline into CR LF.
	u.term.Write(bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n")))
	return u.term.String()
}

// waitScreen waits until the screen satisfies cond and returns it.
func (u *tui) waitScreen(what string, cond func(string) bool) string {
	u.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := u.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("timed out waiting for %s; the screen:\n%s", what, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (u *tui) waitFor(text string) string {
	u.t.Helper()
	return u.waitScreen(fmt.Sprintf("%q on the screen", text), func(s string) bool { return strings.Contains(s, text) })
}

func (u *tui) waitGone(text string) string {
	u.t.Helper()
	return u.waitScreen(fmt.Sprintf("%q to leave the screen", text), func(s string) bool { return !strings.Contains(s, text) })
}

// press sends keys: single characters, or names (enter, esc, up, down, space, ctrl+s).
func (u *tui) press(keys ...string) {
	for _, k := range keys {
		u.tm.Send(keyMsg(k))
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "ctrl+s":
		return tea.KeyPressMsg{Code: 's', Mod: tea.ModCtrl}
	case "ctrl+u":
		return tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// typeText types a string into whatever has the keyboard.
func (u *tui) typeText(s string) {
	for _, r := range s {
		u.tm.Send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// waitCalls waits until the daemon has seen want, in this order, and nothing else.
func waitCalls(t *testing.T, f *fakeDaemon, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := f.callLog()
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon calls:\n got %q\nwant %q", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
