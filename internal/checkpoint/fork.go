package checkpoint

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/backend"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/sandbox"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/termtext"
)

// MaxForks is the most sandboxes one fork makes.
const MaxForks = 8

// Fork makes new sandboxes (req.Count, on req.Backend) with a sandbox's files and
// conversation at a checkpoint, each with an identity of its own. progress hears each
// step.
//
// Each fork is made through the sandbox service's own creation, so it gets what any new
// sandbox gets: its own placeholder credentials, guest, machine id and hostname. Its
// workspace is the parent's, copied out once and into each fork, then put at the
// checkpoint's files; its conversation is the checkpoint's, which its session resumes.
// All of that, the session's start included, happens while the sandbox is being made: a
// failure, or a daemon killed meanwhile, leaves no half-made fork (a restart removes a
// sandbox still being made), and a failure of one fork removes the others.
func (s *Service) Fork(ctx context.Context, sandboxName string, req wire.ForkRequest, progress func(string)) (wire.ForkResult, error) {
	if progress == nil {
		progress = func(string) {}
	}
	names, err := forkNames(req.New, req.Count)
	if err != nil {
		return wire.ForkResult{}, err
	}
	parent, err := s.opts.Sandboxes.Record(ctx, sandboxName)
	if err != nil {
		return wire.ForkResult{}, err
	}
	for _, n := range names {
		if _, err := s.opts.Store.GetSandbox(ctx, n); err == nil {
			return wire.ForkResult{}, apperr.Conflict("choose another name, or remove it with `paddock rm "+n+"`", "a sandbox named %q already exists", n)
		}
	}
	if req.Backend != "" {
		if _, err := s.opts.Sandboxes.PickBackend(ctx, req.Backend); err != nil {
			return wire.ForkResult{}, err
		}
	}
	if req.Session != "" {
		if _, err := s.opts.Store.GetSession(ctx, parent.ID, req.Session); err != nil {
			return wire.ForkResult{}, apperr.NotFound(fmt.Sprintf("see them with `paddock chat %s --list`", sandboxName), "sandbox %q has no session named %q", sandboxName, req.Session)
		}
	}
	cp, err := s.forkPoint(ctx, sandboxName, req, progress)
	if err != nil {
		return wire.ForkResult{}, err
	}
	se, err := s.forkSession(ctx, parent, cp, req.Session)
	if err != nil {
		return wire.ForkResult{}, err
	}
	backendName := req.Backend
	if backendName == "" {
		backendName = parent.Backend
	}
	var fill filler
	if cloner := s.cloner(ctx, parent, backendName); cloner != nil {
		// Each fork's backend copies the parent's workspace itself, all at once, under
		// the parent's lock: no checkpoint pruned, nor rewind, while it is read.
		defer s.lock(parent.ID)()
		fill = func(ctx context.Context, sb store.Sandbox, c *guestclient.Client) (string, error) {
			if err := forkScript(ctx, c, forkFillScript); err != nil {
				return "", err
			}
			if err := cloner.CloneWorkspace(ctx, backend.ID(parent.ID), backend.ID(sb.ID), []string{".mcp.json"}); err != nil {
				return "", err
			}
			return "copied the workspace of " + parent.Name, nil
		}
	} else {
		archive, err := s.copyOut(ctx, parent, progress)
		if err != nil {
			return wire.ForkResult{}, err
		}
		defer archive.Close()
		fill = func(ctx context.Context, _ store.Sandbox, c *guestclient.Client) (string, error) {
			if err := fillWorkspace(ctx, c, archive.reader()); err != nil {
				return "", err
			}
			return "copied the workspace in (" + termtext.Size(archive.size) + ")", nil
		}
	}
	var mu sync.Mutex
	say := func(line string) { mu.Lock(); progress(line); mu.Unlock() }
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.makeFork(ctx, parent, cp, se, name, backendName, fill, say)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		// Those made go (one that failed removed itself; a name taken meanwhile is
		// another's, and stays).
		var made []string
		for i, name := range names {
			if errs[i] == nil {
				made = append(made, name)
			}
		}
		s.removeForks(ctx, made)
		return wire.ForkResult{}, fmt.Errorf("fork %s: %w (nothing was made; `paddock ls` shows what is there)", sandboxName, err)
	}
	res := wire.ForkResult{From: cp, Sandboxes: names}
	if se != nil {
		res.Sessions = []string{se.Name}
	}
	return res, nil
}

// forkNames are the new sandboxes' names: NEW, or NEW-1 … NEW-K.
func forkNames(base string, count int) ([]string, error) {
	if base == "" {
		return nil, apperr.Invalid("", "name the new sandbox")
	}
	if count < 0 || count > MaxForks {
		return nil, apperr.Invalid(fmt.Sprintf("fork at most %d at a time", MaxForks), "cannot make %d forks at once", count)
	}
	names := []string{base}
	if count > 1 {
		names = names[:0]
		for i := 1; i <= count; i++ {
			names = append(names, fmt.Sprintf("%s-%d", base, i))
		}
	}
	for _, n := range names {
		if err := sandbox.ValidateName(n); err != nil {
			return nil, apperr.Invalid("", "new sandbox's name: %v", err)
		}
	}
	return names, nil
}

// forkPoint is the checkpoint a fork starts from: the one req.At names, or one taken now.
func (s *Service) forkPoint(ctx context.Context, sandboxName string, req wire.ForkRequest, progress func(string)) (wire.Checkpoint, error) {
	if req.At != "" {
		return s.Resolve(ctx, sandboxName, req.Session, req.At)
	}
	progress("taking a checkpoint of " + target(sandboxName, req.Session))
	return s.Take(ctx, sandboxName, wire.CheckpointRequest{Session: req.Session}, wire.CheckpointManual)
}

// forkSession is the session a fork starts: the checkpoint's (whose conversation it
// resumes), or the one asked for (which starts afresh when the checkpoint holds none of
// its conversation); nil for none.
func (s *Service) forkSession(ctx context.Context, parent store.Sandbox, cp wire.Checkpoint, asked string) (*store.Session, error) {
	name := cp.Session
	if name == "" {
		name = asked
	}
	if name == "" {
		return nil, nil
	}
	rec, err := s.opts.Store.GetSession(ctx, parent.ID, name)
	if err != nil {
		if cp.Conversation == nil {
			return nil, nil // a session since removed, whose conversation the checkpoint does not hold
		}
		rec = store.Session{Name: name, Agent: cp.Conversation.Agent}
	}
	se := store.Session{Name: rec.Name, Agent: rec.Agent, Command: rec.Command, Dir: rec.Dir}
	if c := cp.Conversation; c != nil && cp.Session == name {
		se.Agent, se.ResumeID = c.Agent, c.ResumeID
	}
	if a, err := agents.Get(se.Agent); err == nil && a.ChoosesID && se.ResumeID == "" {
		se.ResumeID = conversationID() // a new conversation, of an id paddock chooses
	}
	return &se, nil
}

// filler puts the parent's workspace into a fork's, as its sandbox is made, and says
// what it did.
type filler func(ctx context.Context, sb store.Sandbox, c *guestclient.Client) (string, error)

// cloner is the backend's own copy of workspaces, when the forks are on the parent's
// backend and it has one; nil otherwise (the workspace goes through an archive).
func (s *Service) cloner(ctx context.Context, parent store.Sandbox, backendName string) backend.WorkspaceCloner {
	if backendName != parent.Backend {
		return nil
	}
	b, err := s.opts.Sandboxes.PickBackend(ctx, backendName)
	if err != nil {
		return nil
	}
	c, _ := b.(backend.WorkspaceCloner)
	return c
}

// workspaceArchive is the archive of a parent's /workspace: a file on the host with no
// name (removed as soon as made, so that a daemon killed meanwhile leaves nothing behind),
// which every fork reads at once.
type workspaceArchive struct {
	f    *os.File
	size int64
}

// reader reads the archive from its start, beside any other reader.
func (a *workspaceArchive) reader() io.Reader { return io.NewSectionReader(a.f, 0, a.size) }

func (a *workspaceArchive) Close() error { return a.f.Close() }

// copyOut streams the parent's /workspace into an archive on the host, once for every
// fork; the parent's own .mcp.json, which holds its tunnel's credentials, is left out
// (each fork has its own).
func (s *Service) copyOut(ctx context.Context, parent store.Sandbox, progress func(string)) (*workspaceArchive, error) {
	c, err := s.opts.Sandboxes.Client(ctx, parent.Name)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "paddock-fork-*.tar")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	start := time.Now()
	unlock := s.lock(parent.ID) // no checkpoint pruned, nor rewind, while it is read
	cw := &countingWriter{w: f}
	err = tarWorkspace(ctx, c, cw)
	unlock()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("copy the workspace of %s: %w", parent.Name, err)
	}
	progress(fmt.Sprintf("copied the workspace of %s (%s) in %.1fs", parent.Name, termtext.Size(cw.n), time.Since(start).Seconds()))
	return &workspaceArchive{f: f, size: cw.n}, nil
}

// countingWriter counts what goes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// makeFork makes one fork: a sandbox like its parent on backendName, filled while it is
// made with the parent's workspace at the checkpoint, the conversation and the session's
// record.
func (s *Service) makeFork(ctx context.Context, parent store.Sandbox, cp wire.Checkpoint, se *store.Session, name, backendName string, fill filler, say func(string)) error {
	say(fmt.Sprintf("making %s on %s", name, backendName))
	req := sandbox.CreateRequest{SandboxCreateRequest: wire.SandboxCreateRequest{Name: name, Backend: backendName,
		SourcePath: parent.SourcePath, SourceURL: parent.SourceURL, Commit: parent.BaseCommit, Network: parent.Network,
		Agents: agentList(parent.Agents), IdleStopSeconds: int64(parent.IdleStop / time.Second)}}
	if backendName == parent.Backend {
		req.Rootfs, req.Runtime, req.Image = parent.Rootfs, parent.Runtime, parent.Image
	}
	if info, err := s.opts.Sandboxes.Get(ctx, parent.Name); err == nil && info.Limits != nil {
		l := info.Limits
		req.CPUs, req.MemoryBytes, req.PidsLimit = l.CPUs, l.MemoryBytes, l.Pids
		if backendName == parent.Backend {
			req.DiskBytes = l.DiskBytes // another backend may have no disk limit to set
		}
	}
	rules, err := s.opts.Sandboxes.Net().List(ctx, parent.Name)
	if err != nil {
		return fmt.Errorf("read the egress rules of %s: %w", parent.Name, err)
	}
	req.Seeded = func(ctx context.Context, sb store.Sandbox, c *guestclient.Client, _ sandbox.Progress) error {
		start := time.Now()
		did, err := fill(ctx, sb, c)
		if err != nil {
			return fmt.Errorf("copy the workspace into %s: %w", name, err)
		}
		say(fmt.Sprintf("%s: %s in %.1fs; putting the files at checkpoint #%d (turn %d)",
			name, did, time.Since(start).Seconds(), cp.Seq, cp.Turn))
		start = time.Now()
		files, err := restoreFilesIn(ctx, c, inside.Workspace, cp, excludeSpecs(s.opts.Exclude))
		if err != nil {
			return fmt.Errorf("put the files of checkpoint #%d in %s: %w", cp.Seq, name, err)
		}
		say(fmt.Sprintf("%s: %d files put back at checkpoint #%d in %.1fs", name, files, cp.Seq, time.Since(start).Seconds()))
		if cp.Conversation != nil && se != nil && cp.Session == se.Name {
			if err := restoreConversation(ctx, c, cp); err != nil {
				return fmt.Errorf("put the conversation of checkpoint #%d in %s: %w", cp.Seq, name, err)
			}
		}
		if err := s.adoptCheckpoint(ctx, c, sb, cp); err != nil {
			return err
		}
		for _, r := range rules {
			if r.Scope != parent.Name {
				continue // the daemon's own rules apply to the fork as they are
			}
			if _, err := s.opts.Sandboxes.Net().Set(ctx, sb.Name, r.Pattern, r.Action); err != nil {
				return fmt.Errorf("copy the egress rule %s %s to %s: %w", r.Action, r.Pattern, name, err)
			}
		}
		if se != nil {
			rec := *se
			rec.SandboxID = sb.ID
			if err := s.opts.Store.CreateSession(ctx, rec); err != nil {
				return fmt.Errorf("record session %s in %s: %w", se.Name, name, err)
			}
			// Started while the sandbox is still being made: a daemon killed before it
			// is made leaves no fork, and after, a fork whose session runs.
			say(fmt.Sprintf("starting session %s/%s (%s)", name, se.Name, se.Agent))
			if _, err := s.opts.Sessions.Restart(ctx, name, se.Name); err != nil {
				return fmt.Errorf("start session %s in %s: %w", se.Name, name, err)
			}
		}
		return nil
	}
	warn := func(line string) {
		if strings.HasPrefix(line, "warning:") {
			say(name + ": " + line)
		}
	}
	start := time.Now()
	if _, err := s.opts.Sandboxes.Create(ctx, req, nil, warn); err != nil {
		return fmt.Errorf("make %s: %w", name, err)
	}
	say(fmt.Sprintf("made %s in %.1fs", name, time.Since(start).Seconds()))
	return nil
}

// forkFillScript empties the new sandbox's /workspace but for its own .mcp.json (and the
// exclude line that keeps it out of git), for the parent's copy.
const forkFillScript = `cd /workspace && find . -mindepth 1 -maxdepth 1 ! -name .mcp.json -exec rm -rf -- {} +`

// fillWorkspace puts the parent's /workspace (the archive) in place of the sandbox's.
func fillWorkspace(ctx context.Context, c *guestclient.Client, archive io.Reader) error {
	if err := forkScript(ctx, c, forkFillScript); err != nil {
		return err
	}
	if _, _, err := c.TarIn(ctx, inside.Workspace, ".", archive); err != nil {
		return fmt.Errorf("copy the workspace in: %w", err)
	}
	return nil
}

// adoptScript keeps, of the parent's checkpoints, only the one forked from ($1), as the
// fork's first ($2): its commit and conversation stay reachable, and the fork's own
// checkpoints number on from it without meeting the parent's refs.
const adoptScript = `set -e
git for-each-ref --format='delete %(refname)' refs/paddock/checkpoints/ | git update-ref --stdin
git update-ref "refs/paddock/checkpoints/$2" "$1"
`

// adoptCheckpoint records the checkpoint forked from as the fork's first, so that its
// turns go on from that one (the next is cp.Turn+1) and a rewind there can come back to
// it.
func (s *Service) adoptCheckpoint(ctx context.Context, c *guestclient.Client, sb store.Sandbox, cp wire.Checkpoint) error {
	seq, err := s.opts.Store.NextCheckpointSeq(ctx, sb.ID)
	if err != nil {
		return err
	}
	if err := forkScript(ctx, c, adoptScript, cp.Commit, fmt.Sprint(seq)); err != nil {
		return fmt.Errorf("keep checkpoint #%d in %s: %w", cp.Seq, sb.Name, err)
	}
	own := cp
	own.Seq, own.Sandbox, own.RewoundTo = seq, sb.Name, 0
	return s.opts.Store.AddCheckpoint(ctx, sb.ID, own)
}

// removeForks removes the forks made of a fork that failed; one never made is fine.
func (s *Service) removeForks(ctx context.Context, names []string) {
	for _, name := range names {
		err := s.opts.Sandboxes.Remove(context.WithoutCancel(ctx), name, sandbox.RemoveOptions{Force: true, Purge: true}, nil, nil)
		if err != nil && apperr.KindOf(err) != apperr.KindNotFound {
			s.log.Warn("remove a fork that failed", "sandbox", name, "err", err)
		}
	}
}

// agentList splits a comma-separated list, leaving out empty items.
func agentList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// conversationID is a random (version 4) UUID.
func conversationID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
