package session

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/store"
)

// live is what the sandbox says about its sessions right now.
type live struct {
	panes  map[string]pane
	status map[string]hookStatus
}

type pane struct {
	dead       bool
	exitStatus string
}

// hookStatus is a status file, as `paddock guest notify` writes it.
type hookStatus struct {
	Status string `json:"status"`
	Time   int64  `json:"time"`
	// AgentSession is the conversation id the agent's hook reported, if any.
	AgentSession string `json:"agent_session,omitempty"`
}

// liveScript prints, in one round trip, the status file of each session named after
// its first three arguments ($1 the tmux socket, $2 the status directory, $3 the most
// of a file read), then every tmux pane. The status directory is the agent's to write:
// only the files of the sessions asked about are read, each a regular file (not a
// symlink, a FIFO or a device), and at most $3 bytes of it.
const liveScript = `socket=$1 dir=$2 max=$3
shift 3
for n do
  f="$dir/$n.json"
  [ -f "$f" ] && [ ! -h "$f" ] || continue
  printf 'status\t%s\t' "$n"; head -c "$max" -- "$f" | tr -d '\n'; echo
done
tmux -S "$socket" list-panes -a -F 'pane	#{session_name}	#{pane_dead}	#{pane_dead_status}' 2>/dev/null
`

// maxStatusFile is the most of a status file read. `paddock guest notify` writes a line
// of JSON; a larger file is the agent's doing, and its status is unknown.
const maxStatusFile = 64 << 10

// readLive reads the sandbox's tmux panes and the status files of the sessions named.
func readLive(ctx context.Context, c *guestclient.Client, names ...string) (live, error) {
	return readLiveAt(ctx, c, Socket, StatusDir, names...)
}

// readLiveAt is readLive with the tmux socket and the status files at socket and dir.
func readLiveAt(ctx context.Context, c *guestclient.Client, socket, dir string, names ...string) (live, error) {
	l := live{panes: map[string]pane{}, status: map[string]hookStatus{}}
	argv := append([]string{"sh", "-c", liveScript, "sh", socket, dir, strconv.Itoa(maxStatusFile + 1)}, names...)
	// Room for each status file asked for at its largest (with its name, of at most
	// 63 characters, and its line's framing), and the panes.
	out, _, err := runMax(ctx, c, maxOutput+len(names)*(maxStatusFile+80), argv...)
	if err != nil {
		return l, err
	}
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.SplitN(line, "\t", 4)
		switch {
		case len(f) == 4 && f[0] == "pane":
			l.panes[f[1]] = pane{dead: f[2] == "1", exitStatus: f[3]}
		case len(f) >= 3 && f[0] == "status" && len(f[2]) <= maxStatusFile:
			var hs hookStatus
			if json.Unmarshal([]byte(f[2]), &hs) == nil {
				l.status[f[1]] = hs
			}
		}
	}
	return l, nil
}

// statusOf derives a session's status from its pane and its hooks.
func statusOf(l live, name string) (status, detail string) {
	p, ok := l.panes[name]
	switch {
	case !ok:
		return "exited", "no process: bring it back with `paddock restart`"
	case p.dead:
		return "exited", "exit status " + p.exitStatus
	}
	if hs, ok := l.status[name]; ok && hs.Status != "" {
		return knownStatus(hs.Status), ""
	}
	return "running", ""
}

// List returns a sandbox's sessions with their live status.
func (s *Service) List(ctx context.Context, sandboxName string) ([]Info, error) {
	sb, err := s.sandboxes.Record(ctx, sandboxName)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ListSessions(ctx, sb.ID)
	if err != nil {
		return nil, err
	}
	out := []Info{}
	if len(rows) == 0 {
		return out, nil
	}
	c, cerr := s.sandboxes.Client(ctx, sandboxName)
	var l live
	var lerr error
	if cerr == nil {
		names := make([]string, len(rows))
		for i, se := range rows {
			names[i] = se.Name
		}
		l, lerr = readLive(ctx, c, names...)
	}
	for _, se := range rows {
		in := Info{Sandbox: sb.Name, Name: se.Name, Agent: se.Agent, ResumeID: se.ResumeID, CreatedAt: se.CreatedAt}
		switch {
		case cerr != nil && !se.Ended && apperr.KindOf(cerr) == apperr.KindConflict:
			// Its sandbox is stopped (or suspended): starting it resumes the session.
			in.Status, in.Detail = "stopped", "its sandbox is stopped: `paddock start "+sb.Name+"` resumes it"
		case cerr != nil && se.Ended:
			in.Status, in.Detail = "exited", "it had ended before its sandbox stopped: `paddock restart "+sb.Name+"/"+se.Name+"` brings it back"
		case cerr != nil:
			in.Status, in.Detail = "exited", "the sandbox is not running"
		case lerr != nil:
			in.Status, in.Detail = "unknown", "its state could not be read: "+lerr.Error()
		default:
			in.Status, in.Detail = statusOf(l, se.Name)
			s.learnResumeID(ctx, sb, &se, l)
			in.ResumeID = se.ResumeID
			s.summarize(ctx, c, sb, se, &in)
		}
		out = append(out, in)
	}
	return out, nil
}

// ListAll returns, by sandbox name, the sessions of every sandbox ctx's viewer sees
// that has any: what `ls` shows in one call, however many sandboxes there are. Only
// the sandboxes with sessions are asked for their live state, a few at once.
func (s *Service) ListAll(ctx context.Context) (map[string][]Info, error) {
	with, err := s.store.SandboxesWithSessions(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ListSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]Info{}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(listWorkers)
	for _, sb := range rows {
		if !with[sb.ID] || !sandbox.Sees(ctx, sb) {
			continue
		}
		g.Go(func() error {
			list, err := s.listBounded(ctx, sb.ID, sb.Name)
			if err == nil && len(list) > 0 {
				mu.Lock()
				out[sb.Name] = list
				mu.Unlock()
			}
			return nil // a sandbox removed meanwhile is left out, not an error
		})
	}
	g.Wait()
	return out, nil
}

// listWorkers is how many sandboxes' sessions ListAll reads at once.
const listWorkers = 8

// learnResumeID records a conversation id an agent's hook reported, for agents whose ids
// paddock does not choose.
func (s *Service) learnResumeID(ctx context.Context, sb store.Sandbox, se *store.Session, l live) {
	hs, ok := l.status[se.Name]
	if !ok || hs.AgentSession == "" || hs.AgentSession == se.ResumeID || se.ResumeID != "" {
		return
	}
	if s.store.SetResumeID(ctx, sb.ID, se.Name, hs.AgentSession) == nil {
		se.ResumeID = hs.AgentSession
	}
}

func (s *Service) info(ctx context.Context, t *target) (Info, error) {
	l, err := readLive(ctx, t.client, t.se.Name)
	if err != nil {
		return Info{}, err
	}
	in := Info{Sandbox: t.sb.Name, Name: t.se.Name, Agent: t.se.Agent, ResumeID: t.se.ResumeID, CreatedAt: t.se.CreatedAt}
	in.Status, in.Detail = statusOf(l, t.se.Name)
	s.summarize(ctx, t.client, t.sb, t.se, &in)
	return in, nil
}

// waitStatus waits until done accepts the session's status, or the timeout passes, and
// returns the status. It looks again whenever the sandbox's agent pushes a status or exit
// of the session, and every second in case none comes (a process that died before its
// hook could say so).
func (s *Service) waitStatus(ctx context.Context, t *target, timeout time.Duration, done func(string) bool) string {
	name := t.se.Name
	match := func(ev events.Event) bool {
		return ev.Sandbox == t.sb.Name && ev.Session == name &&
			(ev.Kind == guestproto.EventSessionStatus || ev.Kind == guestproto.EventSessionExited)
	}
	sub := s.sandboxes.Events().Subscribe(16, match)
	defer func() { sub.Close() }()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		l, err := readLive(ctx, t.client, name)
		if err != nil {
			return "error"
		}
		st, _ := statusOf(l, name)
		if done(st) {
			return st
		}
		select {
		case <-ctx.Done():
			return st
		case <-deadline.C:
			return st
		case <-sub.Dropped():
			sub = s.sandboxes.Events().Subscribe(16, match) // and look again: that is all an event asks
		case <-sub.C():
		case <-tick.C:
		}
	}
}
