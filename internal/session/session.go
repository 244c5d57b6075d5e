// Package session runs agent conversations inside sandboxes: one tmux server per
// sandbox, one tmux session per conversation, started through the guest with the
// agent adapter's argv, files and environment. Sessions outlive the CLI, the daemon and
// a detach; their list and resume ids live in the daemon's state, their live status in
// the sandbox (the tmux pane, and the status files the agents' hooks write through
// `paddock guest notify`).
package session

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/lastread"
	"github.com/paddockhq/paddock/internal/limitbuf"
	"github.com/paddockhq/paddock/internal/proxy/keyring"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/shell"
	"github.com/paddockhq/paddock/internal/store"
)

// Paths inside every sandbox.
const (
	// Socket is the sandbox's tmux server socket.
	Socket = wire.SessionSocket
	// StatusDir holds one status file per session, written by `paddock guest notify`.
	StatusDir = inside.StatusDir
	// tmuxConf is read when the tmux server starts.
	tmuxConf = inside.Home + "/.paddock/tmux.conf"
	// Workdir is where sessions start.
	Workdir = inside.Workspace
)

// WorktreeDir is where a worktree of branch lives inside the sandbox (wire.WorktreeDir).
func WorktreeDir(branch string) string { return wire.WorktreeDir(branch) }

// Info is wire.SessionInfo.
type Info = wire.SessionInfo

// Service manages sessions.
type Service struct {
	sandboxes *sandbox.Service
	// keys are the credential proxy's keys and logins, which a session's agent uses.
	keys  *keyring.Service
	store *store.Store
	log   *slog.Logger
	// known is what listings last read of each sandbox's sessions (listBounded).
	known lastread.Cache[[]Info]
	// scan is how far each transcript was read for alarms (scanTranscript).
	scan scanned
}

// New returns a Service over the sandbox service and the credential proxy's keys and
// logins, and makes it the sandbox service's keeper of sessions: a sandbox's start
// resumes the sessions its stop found running.
func New(sandboxes *sandbox.Service, keys *keyring.Service, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{sandboxes: sandboxes, keys: keys, store: sandboxes.Store(), log: log}
	sandboxes.SetSessionKeeper(keeper{s})
	return s
}

// target is a resolved sandbox and session.
type target struct {
	sb     store.Sandbox
	se     store.Session
	agent  *agents.Agent
	client *guestclient.Client
	// loginEnv and loginFile are the placeholders of the subscription login the agent
	// uses, while the daemon holds it (read when the target is resolved).
	loginEnv  []string
	loginFile []byte
	proxyCA   []byte
}

// newTarget resolves what the session's agent is given of the daemon's logins.
func (s *Service) newTarget(sb store.Sandbox, se store.Session, a *agents.Agent, c *guestclient.Client) *target {
	t := &target{sb: sb, se: se, agent: a, client: c, loginEnv: s.keys.LoginEnv(sb, a.Login),
		loginFile: s.keys.LoginFile(sb, a.Login), proxyCA: s.keys.ProxyCA()}
	if t.loginEnv != nil {
		t.loginEnv = append(t.loginEnv, a.LoginEnv...)
	}
	return t
}

// env is what the agent's process gets besides the sandbox's environment.
func (t *target) env() []string {
	return append(append([]string(nil), t.agent.Env...), t.loginEnv...)
}

func (s *Service) resolve(ctx context.Context, sandboxName, name string) (*target, error) {
	sb, err := s.sandboxes.Record(ctx, sandboxName)
	if err != nil {
		return nil, err
	}
	se, err := s.store.GetSession(ctx, sb.ID, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apperr.NotFound(fmt.Sprintf("run `paddock chat %s --list` to see its sessions", sandboxName),
			"sandbox %q has no session named %q", sandboxName, name)
	}
	if err != nil {
		return nil, err
	}
	a, err := agents.Get(se.Agent)
	if err != nil {
		return nil, err
	}
	c, err := s.sandboxes.Client(ctx, sandboxName)
	if err != nil {
		return nil, err
	}
	return s.newTarget(sb, se, a, c), nil
}

func (t *target) session() agents.Session {
	dir := Workdir
	if t.se.Dir != "" {
		dir = t.se.Dir
	}
	return agents.Session{Name: t.se.Name, ResumeID: t.se.ResumeID, Dir: dir, Command: t.se.Command,
		Token: t.sb.CredsToken, CredsBase: fmt.Sprintf("http://127.0.0.1:%d", t.sb.CredsPort), Machine: backend.IsMachine(t.sb.Backend),
		LoginFile: t.loginFile, ProxyCA: t.proxyCA}
}

// CreateRequest is wire.SessionCreateRequest.
type CreateRequest = wire.SessionCreateRequest

// Create starts a new session; its agent is at its prompt when Create returns (or, for
// a slow agent, still starting: see its status).
func (s *Service) Create(ctx context.Context, sandboxName string, req CreateRequest) (Info, error) {
	if err := sandbox.ValidateName(req.Name); err != nil {
		return Info{}, apperr.Invalid("", "session name: %v", err)
	}
	var from store.Session
	if req.ForkOf != "" {
		sb, err := s.sandboxes.Record(ctx, sandboxName)
		if err != nil {
			return Info{}, err
		}
		if from, err = s.store.GetSession(ctx, sb.ID, req.ForkOf); errors.Is(err, store.ErrNotFound) {
			return Info{}, apperr.NotFound(fmt.Sprintf("see them with `paddock chat %s --list`", sandboxName), "sandbox %q has no session named %q", sandboxName, req.ForkOf)
		} else if err != nil {
			return Info{}, err
		}
		if req.Agent != "" && req.Agent != from.Agent {
			return Info{}, apperr.Invalid("leave --agent out: a fork runs the agent of its session", "session %q runs %s, not %s", req.ForkOf, from.Agent, req.Agent)
		}
		req.Agent = from.Agent
	}
	if req.Agent == "" {
		req.Agent = agents.Default
	}
	a, err := agents.Get(req.Agent)
	if err != nil {
		return Info{}, apperr.Invalid("run `paddock doctor` to see the agents", "%v", err)
	}
	if strings.TrimSpace(req.Prompt) != "" && a.Name == "shell" {
		return Info{}, apperr.Invalid("name an agent (claude, codex...), or type into the shell with `paddock chat`",
			"a shell session takes no first prompt")
	}
	sb, err := s.sandboxes.Record(ctx, sandboxName)
	if err != nil {
		return Info{}, err
	}
	c, err := s.sandboxes.Client(ctx, sandboxName)
	if err != nil {
		return Info{}, err
	}
	if err := installed(ctx, c, a); err != nil {
		return Info{}, err
	}
	if err := s.keys.NeedKey(ctx, a.Provider, a.Login, a.Name); err != nil {
		return Info{}, err
	}
	se := store.Session{SandboxID: sb.ID, Name: req.Name, Agent: a.Name, Command: req.Command}
	if req.Worktree != "" {
		se.Dir = WorktreeDir(req.Worktree)
		if _, err := c.Stat(ctx, "/", se.Dir); err != nil {
			return Info{}, apperr.NotFound(fmt.Sprintf("make it with `paddock worktree add %s %s`", sandboxName, req.Worktree),
				"sandbox %q has no worktree %q", sandboxName, req.Worktree)
		}
	}
	if req.ForkOf != "" {
		if !a.CanFork() {
			return Info{}, apperr.Invalid("start a new session instead", "agent %s cannot fork a conversation", a.Name)
		}
		if from.ResumeID == "" {
			return Info{}, apperr.Conflict("send it a message first", "session %q has no conversation to fork yet", req.ForkOf)
		}
		se.Dir = from.Dir
	}
	if a.ChoosesID {
		se.ResumeID = newUUID() // the agent takes the conversation id paddock chooses
	}
	if err := s.store.CreateSession(ctx, se); errors.Is(err, store.ErrNameTaken) {
		return Info{}, apperr.Conflict(fmt.Sprintf("attach to it with `paddock chat %s/%s`, or choose another name", sandboxName, req.Name),
			"sandbox %q already has a session named %q", sandboxName, req.Name)
	} else if err != nil {
		return Info{}, err
	}
	t := s.newTarget(sb, se, a, c)
	argv := a.LaunchArgv(t.session())
	if req.ForkOf != "" {
		if err := s.saved(ctx, &target{sb: sb, se: from, agent: a, client: c}); err != nil {
			s.store.DeleteSession(context.WithoutCancel(ctx), sb.ID, req.Name)
			return Info{}, err
		}
		argv = a.ForkArgv(t.session(), from.ResumeID)
	}
	if req.Disposable {
		if err := s.tellDisposable(ctx, t); err != nil {
			s.store.DeleteSession(context.WithoutCancel(ctx), sb.ID, req.Name)
			return Info{}, err
		}
	}
	if err := s.launch(ctx, t, argv); err != nil {
		s.store.DeleteSession(context.WithoutCancel(ctx), sb.ID, req.Name)
		return Info{}, err
	}
	attrs := map[string]string{"agent": a.Name, "argv": shell.Join(argv)} // argv: what the flight record keeps of the launch
	detail := req.Name + " (" + a.Name + ")"
	if req.ForkOf != "" {
		attrs["fork_of"], detail = req.ForkOf, req.Name+" ("+a.Name+", a fork of "+req.ForkOf+")"
	}
	s.sandboxes.Emit(ctx, sb, events.Event{Kind: "session-started", Session: req.Name, Detail: detail, Attrs: attrs})
	if strings.TrimSpace(req.Prompt) != "" {
		if err := s.firstPrompt(ctx, t, sandboxName, req.Prompt); err != nil {
			return Info{}, err
		}
	}
	return s.info(ctx, t)
}

// promptWait is how long a first prompt waits for its agent to be at its prompt.
const promptWait = 3 * time.Minute

// firstPrompt types a new session's first message once its agent is at its prompt.
func (s *Service) firstPrompt(ctx context.Context, t *target, sandboxName, prompt string) error {
	retry := fmt.Sprintf("type it with `paddock chat %s/%s`", sandboxName, t.se.Name)
	switch st := s.waitStatus(ctx, t, promptWait, func(st string) bool { return st != "starting" }); st {
	case "starting":
		return apperr.Unavailable(retry+" once it is ready", "session %s/%s started, but %s was not at its prompt within %v: its first prompt was not sent", sandboxName, t.se.Name, t.agent.Name, promptWait)
	case "exited", "error":
		return apperr.Conflict(fmt.Sprintf("see its screen with `paddock chat %s/%s`", sandboxName, t.se.Name),
			"session %s/%s %s before its first prompt could be sent", sandboxName, t.se.Name, st)
	}
	// Busy from now, as with a message asked through chat --non-interactive: a listing
	// right after `up --prompt` says working until the agent's hook ends the turn, not
	// idle while the agent is still taking the prompt in (and so nothing to merge yet).
	if err := s.startTurn(ctx, t, prompt, promptWait); err != nil {
		return fmt.Errorf("session %s/%s started, but its first prompt was not sent (%s): %w", sandboxName, t.se.Name, retry, err)
	}
	return nil
}

// saved waits for the conversation of the session a fork starts from to be on disk: an
// agent writes its transcript a moment after its turn ends, and a fork started before
// that finds no conversation to resume (Claude Code exits saying so).
func (s *Service) saved(ctx context.Context, from *target) error {
	sess := from.session()
	for deadline := time.Now().Add(20 * time.Second); s.fresh(ctx, from, sess); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return apperr.Conflict("send it a message first, or wait for its turn to end",
				"session %q has no saved conversation to fork yet", from.se.Name)
		}
	}
	return nil
}

// tellDisposable writes the note that the sandbox is disposable where the agent reads it
// at start; an agent with no memory file cannot be told, and the session is refused.
func (s *Service) tellDisposable(ctx context.Context, t *target) error {
	f, ok := t.agent.DisposableFile()
	if !ok {
		return apperr.Invalid("start it without --disposable", "agent %s reads no memory file paddock could tell that its sandbox is disposable", t.agent.Name)
	}
	if err := writeFile(ctx, t.client, f); err != nil {
		return fmt.Errorf("tell %s its sandbox is disposable: %w", t.agent.Name, err)
	}
	return nil
}

// installed checks the agent's binary is on the sandbox's PATH.
func installed(ctx context.Context, c *guestclient.Client, a *agents.Agent) error {
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", `command -v "$1" >/dev/null`, "sh", a.Binary}})
	if err != nil {
		return err
	}
	if code != 0 {
		hint := "install it in the sandbox's image"
		if a.Install != "" {
			hint = "install it: " + a.Install + " (on the " + backend.Which(func(d backend.Description) bool { return d.HostSystem }) +
				" backend, on the host: the sandbox sees the host's /usr)"
		}
		return apperr.Unavailable(hint, "agent %s is not installed in the sandbox (no %q on its PATH)", a.Name, a.Binary)
	}
	return nil
}

// launch writes the agent's files and starts the tmux session running argv.
func (s *Service) launch(ctx context.Context, t *target, argv []string) error {
	sess := t.session()
	var files []agents.File
	if t.agent.Files != nil {
		files = t.agent.Files(sess)
	}
	for _, f := range append(files, t.agent.PromptFiles(t.session())...) {
		if err := writeFile(ctx, t.client, f); err != nil {
			return fmt.Errorf("prepare %s: %w", t.agent.Name, err)
		}
	}
	if err := writeFile(ctx, t.client, agents.File{Path: tmuxConf, Mode: 0o644, Content: []byte(tmuxConfig)}); err != nil {
		return err
	}
	args := []string{"tmux", "-S", Socket, "-f", tmuxConf, "new-session", "-d", "-s", t.se.Name, "-x", "200", "-y", "50",
		"-c", sess.Dir, "-e", "PADDOCK_SESSION=" + t.se.Name}
	for _, kv := range t.env() {
		args = append(args, "-e", kv)
	}
	args = append(args, "--")
	args = append(args, argv...)
	// An agent whose hooks report readiness starts as "starting" until they do; for the
	// others, the process is all there is to know until their first report.
	initial := ""
	if t.agent.Status.Ready {
		initial = `{"status":"starting"}`
	}
	script := `mkdir -p "$(dirname "$1")" "$2" && rm -f "$2/$3.json" && { [ -z "$4" ] || printf '%s' "$4" > "$2/$3.json"; } && shift 4 && exec "$@"`
	out, code, err := run(ctx, t.client, append([]string{"sh", "-c", script, "sh", Socket, StatusDir, t.se.Name, initial}, args...)...)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("start tmux session %q: %s", t.se.Name, strings.TrimSpace(out))
	}
	return nil
}

// tmuxConfig keeps a pane whose process exited (so the exit shows, and restart knows),
// reports that exit through the session's status file (which the guest turns into
// a session-exited event), and sets a long scrollback and the mouse. Session names are
// checked (letters, digits, '.', '_', '-'), so they need no quoting in the hook.
const tmuxConfig = `set -g remain-on-exit on
set-hook -g pane-died 'run-shell -b "` + notifyPath + ` ` + inside.GuestCommand + ` notify --status exited --session #{session_name} --exit-status=#{pane_dead_status} </dev/null >/dev/null 2>&1"'
set -g history-limit 50000
set -g mouse on
set -g status-left "[#S] "
`

// notifyPath is the paddock binary inside every sandbox.
const notifyPath = inside.GuestBinary

// run executes argv in the sandbox and returns its combined output and exit code. More
// output than maxOutput is an error: what run's commands print is small (a path, the
// sessions' panes, a screen), and the sandbox chooses what they print.
func run(ctx context.Context, c *guestclient.Client, argv ...string) (string, int, error) {
	return runMax(ctx, c, maxOutput, argv...)
}

// runMax is run taking up to max bytes of output.
func runMax(ctx context.Context, c *guestclient.Client, max int, argv ...string) (string, int, error) {
	out := limitbuf.Buffer{Max: max}
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: argv, Stdout: &out, Stderr: &out})
	return out.String(), code, err
}

// maxOutput is the most output run takes from a command.
const maxOutput = 1 << 20

func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
