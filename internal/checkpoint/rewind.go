package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/store"
)

// Rewind puts a session's sandbox's files and the session's conversation back to a
// checkpoint, after recording the state it leaves as a named checkpoint (its undo).
//
// The order keeps a failure from leaving half a rewind: the session's agent is stopped
// (so it writes nothing meanwhile), the undo point taken, the files restored, then the
// conversation, and the agent started again on it. A failure before the files are
// restored leaves everything as it was; a failure restoring the conversation leaves the
// files restored and says so, with the undo. The file step is one script in the
// sandbox that runs to its end even when the daemon is killed meanwhile. A rewind cut
// off (the daemon killed) leaves a mark in the sandbox's repository: the same rewind
// run again finishes the job, keeping the first run's undo point, and starts the agent
// the first run stopped.
func (s *Service) Rewind(ctx context.Context, sandboxName, sessionName string, req wire.RewindRequest) (wire.RewindResult, error) {
	var res wire.RewindResult
	sb, err := s.opts.Sandboxes.Record(ctx, sandboxName)
	if err != nil {
		return res, err
	}
	// The agent's stop and its start again end no turn of its.
	defer s.hush(sandboxName, sessionName)()
	se, err := s.opts.Store.GetSession(ctx, sb.ID, sessionName)
	if errors.Is(err, store.ErrNotFound) {
		return res, apperr.NotFound(fmt.Sprintf("run `paddock chat %s --list` to see its sessions", sandboxName),
			"sandbox %q has no session named %q", sandboxName, sessionName)
	} else if err != nil {
		return res, err
	}
	all, err := s.opts.Store.ListCheckpoints(ctx, sb.ID, sessionName)
	if err != nil {
		return res, err
	}
	to, err := resolveIn(all, sandboxName, sessionName, req.To)
	if err != nil {
		return res, err
	}
	res.To = to
	c, err := s.opts.Sandboxes.Client(ctx, sandboxName)
	if err != nil {
		return res, err
	}
	// One rewind of a sandbox at a time: a second would take the first's mark for one
	// cut off. (The sandbox's own lock is taken by each checkpoint and the file step.)
	defer s.lock("rewind:" + sb.ID)()
	// Whether the sandbox still holds what the rewind needs, before anything moves.
	pending, err := markRewind(ctx, c, inside.Workspace, to)
	if err != nil {
		return res, err
	}
	// unmark clears the mark of the rewind: it is over, done or having changed nothing.
	unmark := func() error {
		if err := unmarkRewind(context.WithoutCancel(ctx), c); err != nil {
			return fmt.Errorf("clear the mark of the rewind in the sandbox: %w", err)
		}
		return nil
	}

	running, err := s.opts.Sessions.Stop(ctx, sandboxName, sessionName)
	if err != nil {
		return res, errors.Join(err, unmark())
	}
	// A rewind cut off in the middle may have stopped the agent: this one brings it back.
	running = running || pending.commit != ""
	// restart brings the agent back as it was (or on the restored conversation), when
	// it was running; its failure is told with what the rewind did.
	restart := func() error {
		if !running {
			return nil
		}
		if _, err := s.opts.Sessions.Restart(context.WithoutCancel(ctx), sandboxName, sessionName); err != nil && apperr.KindOf(err) != apperr.KindConflict {
			return fmt.Errorf("start session %s/%s again: %w (run `paddock restart %s/%s`)", sandboxName, sessionName, err, sandboxName, sessionName)
		}
		return nil
	}

	undo, reused := pendingUndo(all, to, pending)
	if !reused {
		undo, err = s.takeUndo(ctx, sb, sessionName, to)
		if err != nil {
			return res, errors.Join(fmt.Errorf("rewind %s/%s: record the state before it (nothing was changed): %w", sandboxName, sessionName, err), restart(), unmark())
		}
	}
	res.Undo = undo
	undoHint := fmt.Sprintf("`paddock rewind %s/%s --to %s`", sandboxName, sessionName, undo.Name)

	files, err := s.restoreLocked(ctx, sb.ID, c, to, undo.Seq)
	if err != nil {
		return res, errors.Join(fmt.Errorf("rewind %s/%s: put the files back to %s: %w; the conversation was not touched; "+
			"run the rewind again to finish it, or undo what it did with %s", sandboxName, sessionName, describe(to), err, undoHint), restart())
	}
	res.Files = files
	switch conv := to.Conversation; {
	case conv != nil && conv.Blob != "" && conv.Path != "":
		err := restoreConversation(ctx, c, to)
		if err == nil && conv.ResumeID != "" && conv.ResumeID != se.ResumeID {
			// The agent resumes the conversation by the id it had then (an agent that
			// moved to a new id on a resume has its old one back).
			err = s.opts.Store.SetResumeID(ctx, sb.ID, sessionName, conv.ResumeID)
		}
		if err != nil {
			return res, errors.Join(fmt.Errorf("rewind %s/%s: the files are back at %s, but the conversation could not be: %w; "+
				"run the rewind again, or undo it with %s", sandboxName, sessionName, describe(to), err, undoHint), restart())
		}
	case hasConversation(se.Agent):
		res.Note = fmt.Sprintf("%s holds no conversation of %s's that paddock can put back: the files are back at it, and %s goes on with its conversation as it was",
			describe(to), se.Agent, se.Agent)
	}
	if !running {
		res.Note = strings.TrimSpace(res.Note + fmt.Sprintf("\nthe session's agent was not running: start it with `paddock restart %s/%s`", sandboxName, sessionName))
	}
	if err := restart(); err != nil {
		return res, fmt.Errorf("rewind %s/%s to %s is done (undo with %s), but %w", sandboxName, sessionName, describe(to), undoHint, errors.Join(err, unmark()))
	}
	if err := unmark(); err != nil {
		s.log.Warn("a rewind is done, but its mark stays in the sandbox", "sandbox", sandboxName, "session", sessionName, "err", err)
	}
	if s.opts.Emit != nil {
		attrs := map[string]string{"to": fmt.Sprint(to.Seq), "undo": undo.Name, "files": fmt.Sprint(files)}
		if to.Turn > 0 {
			attrs["turn"] = fmt.Sprint(to.Turn)
		}
		s.opts.Emit(ctx, sb, events.Event{Kind: "rewind", Session: sessionName,
			Detail: fmt.Sprintf("%s rewound to %s (%d files); undo: %s", sessionName, describe(to), files, undo.Name), Attrs: attrs})
	}
	return res, nil
}

// hasConversation says whether an agent keeps a conversation paddock reads (a shell
// session has none to put back).
func hasConversation(agent string) bool {
	a, err := agents.Get(agent)
	return err == nil && (a.Transcript != "" || a.TranscriptCommand != nil)
}

// describe names a checkpoint as a user would: "turn 3", or "#12 (name)".
func describe(cp wire.Checkpoint) string {
	if cp.Kind == wire.CheckpointTurn && cp.Turn > 0 {
		return fmt.Sprintf("turn %d", cp.Turn)
	}
	if cp.Name != "" {
		return fmt.Sprintf("#%d (%s)", cp.Seq, cp.Name)
	}
	return fmt.Sprintf("#%d", cp.Seq)
}

// pendingUndo is, when a rewind to cp was cut off after it had taken its undo point
// (its mark names cp's commit and that point), that undo point: the state before the
// rewind, which a new one (of files part way back) would not be.
func pendingUndo(all []wire.Checkpoint, cp wire.Checkpoint, p pendingRewind) (wire.Checkpoint, bool) {
	if p.commit != cp.Commit || p.undo == 0 {
		return wire.Checkpoint{}, false
	}
	for _, u := range all {
		if u.Seq == p.undo && u.Kind == wire.CheckpointRewind {
			return u, true
		}
	}
	return wire.Checkpoint{}, false
}

// restoreLocked is restoreFilesFor under the sandbox's lock: no checkpoint is taken of
// the files while they are put back.
func (s *Service) restoreLocked(ctx context.Context, sandboxID string, c *guestclient.Client, cp wire.Checkpoint, undo int) (int, error) {
	defer s.lock(sandboxID)()
	return restoreFilesFor(ctx, c, inside.Workspace, cp, undo, excludeSpecs(s.opts.Exclude))
}

// excludeSpecs are the pathspecs that leave a checkpoint's configured excludes out.
func excludeSpecs(exclude []string) []string {
	specs := make([]string, 0, len(exclude))
	for _, e := range exclude {
		specs = append(specs, ":(exclude)"+e)
	}
	return specs
}

// takeUndo records the state a rewind to cp leaves: a checkpoint of kind rewind, named
// undo-SEQ after its own number, whose RewoundTo is cp's.
func (s *Service) takeUndo(ctx context.Context, sb store.Sandbox, sessionName string, cp wire.Checkpoint) (wire.Checkpoint, error) {
	undo, _, err := s.take(ctx, sb, takeOpts{session: sessionName, kind: wire.CheckpointRewind, rewoundTo: cp.Seq})
	return undo, err
}
