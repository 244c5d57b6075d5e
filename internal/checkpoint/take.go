package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/session"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/tailbuf"
	"github.com/paddockhq/paddock/internal/transcript"
)

// Take records a checkpoint of a sandbox now (kind wire.CheckpointManual by hand).
func (s *Service) Take(ctx context.Context, sandboxName string, req wire.CheckpointRequest, kind string) (wire.Checkpoint, error) {
	sb, err := s.opts.Sandboxes.Record(ctx, sandboxName)
	if err != nil {
		return wire.Checkpoint{}, err
	}
	if err := validName(req.Name); err != nil {
		return wire.Checkpoint{}, err
	}
	sessionName := req.Session
	if sessionName == "" {
		// The sandbox's only session, if it has one.
		ses, err := s.opts.Store.ListSessions(ctx, sb.ID)
		if err != nil {
			return wire.Checkpoint{}, err
		}
		if len(ses) == 1 {
			sessionName = ses[0].Name
		}
	} else if _, err := s.opts.Store.GetSession(ctx, sb.ID, sessionName); errors.Is(err, store.ErrNotFound) {
		return wire.Checkpoint{}, apperr.NotFound(fmt.Sprintf("run `paddock chat %s --list` to see its sessions", sandboxName),
			"sandbox %q has no session named %q", sandboxName, sessionName)
	} else if err != nil {
		return wire.Checkpoint{}, err
	}
	cp, _, err := s.take(ctx, sb, takeOpts{session: sessionName, kind: kind, name: req.Name})
	return cp, err
}

// validName refuses a checkpoint's name a reference to it would not find: a number (a
// turn), #N (a sequence number), or one with blanks or control characters.
func validName(name string) error {
	if name == "" {
		return nil
	}
	hint := "name it with letters, digits, '-', '_' or '.', e.g. --name before-refactor"
	if _, err := strconv.Atoi(name); err == nil || strings.HasPrefix(name, "#") {
		return apperr.Invalid(hint, "checkpoint name %q would read as a turn or a checkpoint's number", name)
	}
	if len(name) > 64 {
		return apperr.Invalid(hint, "checkpoint name is %d characters long; at most 64", len(name))
	}
	for _, r := range name {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_.", r)) {
			return apperr.Invalid(hint, "checkpoint name %q holds %q", name, r)
		}
	}
	return nil
}

// takeOpts say what checkpoint take records.
type takeOpts struct {
	// session is the session whose conversation it holds ("" none).
	session string
	// kind is wire.CheckpointTurn, CheckpointManual or CheckpointRewind.
	kind string
	// name is given by hand; with rewoundTo and no name, the checkpoint is named
	// undo-SEQ after its own number.
	name string
	// rewoundTo, for a rewind's undo point, is the Seq of the checkpoint the rewind
	// goes to.
	rewoundTo int
	// ifChanged records nothing when neither the files nor the conversation changed
	// since the session's last checkpoint (the end of a turn that did nothing).
	ifChanged bool
}

// take records a checkpoint of sandbox sb, under the sandbox's lock, and prunes the
// sandbox's checkpoints to their bounds. taken is false when o.ifChanged found nothing
// changed. Rewind, bisect and fork call it for the checkpoints they take.
func (s *Service) take(ctx context.Context, sb store.Sandbox, o takeOpts) (cp wire.Checkpoint, taken bool, err error) {
	defer s.lock(sb.ID)()
	all, err := s.opts.Store.ListCheckpoints(ctx, sb.ID, "")
	if err != nil {
		return cp, false, err
	}
	if o.name != "" {
		for _, c := range all {
			if c.Name == o.name {
				return cp, false, apperr.Conflict(fmt.Sprintf("choose another name, or see them with `paddock checkpoints %s`", sb.Name),
					"%s already has a checkpoint named %q (#%d)", sb.Name, o.name, c.Seq)
			}
		}
	}
	seq, err := s.opts.Store.NextCheckpointSeq(ctx, sb.ID)
	if err != nil {
		return cp, false, err
	}
	if o.name == "" && o.rewoundTo > 0 {
		o.name = fmt.Sprintf("undo-%d", seq)
	}
	cp = wire.Checkpoint{Seq: seq, Sandbox: sb.Name, Session: o.session, Kind: o.kind, Name: o.name,
		RewoundTo: o.rewoundTo, Time: s.opts.Now().UTC().Truncate(1e9)}
	// The counts are against the workspace as the checkpoint before left it.
	base, _ := stateBefore(all, seq)
	var last *wire.Checkpoint
	if o.session != "" {
		cp.Turn = nextTurn(all, o.session)
		if o.kind != wire.CheckpointTurn {
			cp.Turn-- // the turn it was taken after
		}
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].Session == o.session {
				last = &all[i]
				break
			}
		}
		// After a rewind the files and conversation are the checkpoint it went to.
		if last != nil && last.Kind == wire.CheckpointRewind && o.ifChanged {
			for i := range all {
				if all[i].Seq == last.RewoundTo {
					last = &all[i]
				}
			}
		}
	}
	var agent *agents.Agent
	var conv *wire.Conversation
	var glob string
	if o.session != "" {
		se, err := s.opts.Store.GetSession(ctx, sb.ID, o.session)
		if err != nil {
			return cp, false, err
		}
		if a, err := agents.Get(se.Agent); err == nil {
			dir := session.Workdir
			if se.Dir != "" {
				dir = se.Dir
			}
			if glob = a.TranscriptPath(agents.Session{Name: se.Name, ResumeID: se.ResumeID, Dir: dir}); glob != "" {
				agent, conv = a, &wire.Conversation{Agent: se.Agent, ResumeID: se.ResumeID}
			}
		}
	}
	c, err := s.opts.Sandboxes.Client(ctx, sb.Name)
	if err != nil {
		return cp, false, err
	}
	lastTree, lastBlob := "", ""
	if last != nil {
		lastTree = last.Tree
		if last.Conversation != nil {
			lastBlob = last.Conversation.Blob
		}
	}
	out, err := s.runTake(ctx, c, cp, conv, base, lastTree, lastBlob, o.ifChanged && last != nil, glob)
	if err != nil {
		return cp, false, err
	}
	if out.same {
		return cp, false, nil
	}
	cp.Commit, cp.Tree, cp.Head, cp.Branch = out.commit, out.tree, out.head, out.branch
	cp.Files, cp.Added, cp.Deleted, cp.Bytes = out.files, out.added, out.deleted, out.bytes
	if conv != nil && out.blob != "" {
		conv.Path, conv.Blob, conv.Size = out.path, out.blob, out.size
		cp.Conversation = conv
		// A transcript grows by a turn's messages: what it adds to the repository is
		// about what it grew by (git packs one version against another).
		grew := out.size
		if last != nil && last.Conversation != nil && last.Conversation.Blob != out.blob {
			grew = max(0, out.size-last.Conversation.Size)
		} else if last != nil && last.Conversation != nil {
			grew = 0
		}
		cp.Bytes += grew
	}
	cp.Prompt = promptOf(agent, out.tail)
	if cp.Prompt == "" && last != nil && out.blob != "" && last.Conversation != nil && last.Conversation.Blob == out.blob {
		cp.Prompt = last.Prompt
	}
	// The ones past the bounds go first: whoever sees the new one sees them gone.
	s.prune(ctx, sb, c, append(all, cp))
	if err := s.opts.Store.AddCheckpoint(ctx, sb.ID, cp); err != nil {
		return cp, false, err
	}
	if s.opts.Emit != nil {
		s.opts.Emit(ctx, sb, events.Event{Kind: "checkpoint", Session: cp.Session, Detail: summary(cp),
			Attrs: map[string]string{"seq": strconv.Itoa(cp.Seq), "turn": strconv.Itoa(cp.Turn), "kind": cp.Kind}})
	}
	return cp, true, nil
}

// summary is a checkpoint in one line: "turn 3: 4 files +20 -3".
func summary(cp wire.Checkpoint) string {
	what := fmt.Sprintf("#%d", cp.Seq)
	switch {
	case cp.Kind == wire.CheckpointTurn:
		what = fmt.Sprintf("turn %d", cp.Turn)
	case cp.Name != "":
		what = fmt.Sprintf("#%d %s", cp.Seq, cp.Name)
	}
	return fmt.Sprintf("%s: %d files +%d -%d", what, cp.Files, cp.Added, cp.Deleted)
}

// nextTurn is the number of a session's next turn: one past its newest turn's, or,
// when a rewind came after that, one past the turn the rewind went to.
func nextTurn(all []wire.Checkpoint, sessionName string) int {
	for i := len(all) - 1; i >= 0; i-- {
		c := all[i]
		if c.Session != sessionName {
			continue
		}
		switch c.Kind {
		case wire.CheckpointTurn:
			return c.Turn + 1
		case wire.CheckpointRewind:
			for _, to := range all {
				if to.Seq == c.RewoundTo {
					return to.Turn + 1
				}
			}
		}
	}
	return 1
}

// takeOut is what takeScript printed.
type takeOut struct {
	same                       bool
	commit, tree, head, branch string
	path, blob                 string
	size, bytes                int64
	files, added, deleted      int
	tail                       []byte
}

// runTake runs takeScript for checkpoint cp in the sandbox c reaches.
func (s *Service) runTake(ctx context.Context, c *guestclient.Client, cp wire.Checkpoint, conv *wire.Conversation,
	base, lastTree, lastBlob string, ifChanged bool, glob string) (takeOut, error) {
	return s.runTakeIn(ctx, c, inside.Workspace, cp, conv, base, lastTree, lastBlob, ifChanged, glob)
}

// runTakeIn is runTake in the repository at dir.
func (s *Service) runTakeIn(ctx context.Context, c *guestclient.Client, dir string, cp wire.Checkpoint, conv *wire.Conversation,
	base, lastTree, lastBlob string, ifChanged bool, glob string) (takeOut, error) {
	meta, err := recordPrefix(cp)
	if err != nil {
		return takeOut{}, err
	}
	convPrefix := ""
	if conv != nil {
		b, err := json.Marshal(map[string]string{"agent": conv.Agent, "resume_id": conv.ResumeID})
		if err != nil {
			return takeOut{}, err
		}
		convPrefix = strings.TrimSuffix(string(b), "}")
	}
	flag := "0"
	if ifChanged {
		flag = "1"
	}
	argv := append([]string{"sh", "-c", takeScript, "sh", base, lastTree, lastBlob, flag, glob, meta, convPrefix,
		strconv.Itoa(cp.Seq), strconv.FormatInt(cp.Time.Unix(), 10)}, s.opts.Exclude...)
	var stdout bytes.Buffer
	stderr := tailbuf.Buffer{Max: 4 << 10}
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: argv, Env: gitEnv, Dir: dir, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return takeOut{}, err
	}
	switch code {
	case 0:
	case 3:
		return takeOut{}, apperr.Invalid("checkpoints are of the sandbox's repository: run `git init` in its /workspace first",
			"%s: %s", cp.Sandbox, strings.TrimSpace(stderr.String()))
	default:
		return takeOut{}, fmt.Errorf("checkpoint of %s: exit %d: %s", cp.Sandbox, code, strings.TrimSpace(stderr.String()))
	}
	return parseTake(stdout.Bytes())
}

// recordPrefix is the record's JSON without what the script adds nor its closing brace.
func recordPrefix(cp wire.Checkpoint) (string, error) {
	b, err := json.Marshal(cp)
	if err != nil {
		return "", err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	for _, k := range []string{"commit", "tree", "head", "branch", "files", "added", "deleted", "bytes", "conversation", "prompt"} {
		delete(m, k)
	}
	b, err = json.Marshal(m)
	return strings.TrimSuffix(string(b), "}"), err
}

// parseTake reads takeScript's output.
func parseTake(out []byte) (takeOut, error) {
	var t takeOut
	text := out
	if i := bytes.Index(out, []byte("\ntail\n")); i >= 0 {
		text, t.tail = out[:i+1], out[i+len("\ntail\n"):]
	}
	for line := range strings.SplitSeq(string(text), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "same":
			t.same = true
		case "commit":
			t.commit = v
		case "tree":
			t.tree = v
		case "head":
			t.head = v
		case "branch":
			t.branch = v
		case "path":
			t.path = v
		case "blob":
			t.blob = v
		case "size":
			t.size, _ = strconv.ParseInt(v, 10, 64)
		case "bytes":
			t.bytes, _ = strconv.ParseInt(v, 10, 64)
		case "files":
			t.files, _ = strconv.Atoi(v)
		case "added":
			t.added, _ = strconv.Atoi(v)
		case "deleted":
			t.deleted, _ = strconv.Atoi(v)
		}
	}
	if !t.same && t.commit == "" {
		return t, fmt.Errorf("the checkpoint's script said nothing of its commit: %q", string(text))
	}
	return t, nil
}

// promptOf is the message that started the turn whose end the transcript's tail holds:
// its last message from the user, on one line, cut at 200 characters.
func promptOf(a *agents.Agent, tail []byte) string {
	if a == nil || a.Parse == nil || len(tail) == 0 {
		return ""
	}
	// The tail starts part way into a line: the lines from the first whole one.
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && len(tail) >= tailBytes {
		tail = tail[i+1:]
	}
	entries, _ := a.Parse(bytes.NewReader(tail))
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Kind == transcript.KindUser && strings.TrimSpace(entries[i].Text) != "" {
			text := strings.Join(strings.Fields(entries[i].Text), " ")
			if r := []rune(text); len(r) > 200 {
				text = string(r[:200]) + "…"
			}
			return text
		}
	}
	return ""
}
