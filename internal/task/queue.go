package task

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/guestproto"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/termtext"
)

// The merge queue. Entries of one host repository and branch (a lane) land one at a
// time, in the order of their ids: a lane's worker takes its first open entry to an end
// (landed, failed) or to a conflict, which holds the lane until the attempt's agent has
// answered it (ended a turn with other work than the one that conflicted) or a user drops
// the entry. Each step's state is written before the step is done, so that a daemon
// killed at any point finds, on its restart, where each entry was: a rebase or checks
// under way start again from the rebase; an entry whose commit is already the branch's
// tip has landed; one whose commit was recorded but not yet landed is landed now. A pull
// request's entry has no lane: it is pushed and opened, then followed until merged or
// closed.

// PRPollEvery is how often the queue reads the state of an open pull request.
const PRPollEvery = 30 * time.Second

// maxRounds bounds the rebases of one landing whose branch keeps moving under it.
const maxRounds = 5

// queueState is the merge queue's workers.
type queueState struct {
	once sync.Once
	wake chan struct{}

	mu      sync.Mutex
	busy    map[string]bool              // lanes with a worker
	cancels map[int64]context.CancelFunc // entries being worked, or pull requests followed

	// write serializes the writes of entries, so that a dropped entry is never written
	// over and a branch's move and its entry's landing are one step to Drop.
	write sync.Mutex

	// prPoll is how often an open pull request's state is read (PRPollEvery; tests set it).
	prPoll time.Duration
}

// errDropped is an entry a user dropped while it was worked.
var errDropped = errors.New("the entry was dropped")

// q returns the queue's state, made on first use.
func (s *Service) q() *queueState {
	q := &s.queue
	q.once.Do(func() {
		q.wake = make(chan struct{}, 1)
		q.busy = map[string]bool{}
		q.cancels = map[int64]context.CancelFunc{}
		if q.prPoll == 0 {
			q.prPoll = PRPollEvery
		}
	})
	return q
}

// wakeQueue makes the queue look at its entries again.
func (s *Service) wakeQueue() {
	select {
	case s.q().wake <- struct{}{}:
	default:
	}
}

// Queue returns the merge queue's entries, oldest first; with task set, only its.
func (s *Service) Queue(ctx context.Context, task string) ([]wire.QueueEntry, error) {
	return s.opts.Store.QueueEntries(ctx, task)
}

// Drop takes an open entry out of the queue: its worker, if any, stops (a branch being
// moved is moved first, and the entry is then landed, not dropped); a pull request is
// left open on the forge, no longer followed.
func (s *Service) Drop(ctx context.Context, id int64) (wire.QueueEntry, error) {
	q := s.q()
	q.write.Lock()
	e, err := s.opts.Store.GetQueueEntry(ctx, id)
	if errors.Is(err, store.ErrNoQueueEntry) {
		q.write.Unlock()
		return e, apperr.NotFound("`paddock task queue` lists them", "no merge queue entry %d", id)
	}
	if err != nil {
		q.write.Unlock()
		return e, err
	}
	if !e.Open() {
		q.write.Unlock()
		return e, apperr.Conflict("", "merge queue entry %d is %s already", id, e.State)
	}
	e.State, e.Detail = wire.QueueDropped, "dropped"
	if e.PR != nil {
		e.Detail = fmt.Sprintf("dropped; pull request #%d stays open on the forge (%s)", e.PR.Number, e.PR.URL)
	}
	err = s.opts.Store.UpdateQueueEntry(context.WithoutCancel(ctx), e)
	q.write.Unlock()
	if err != nil {
		return e, err
	}
	q.mu.Lock()
	if cancel := q.cancels[id]; cancel != nil {
		cancel()
	}
	q.mu.Unlock()
	s.settle(ctx, e.Task)
	s.wakeQueue()
	return e, nil
}

// turnEnded tells the queue an attempt's agent ended a turn (and its checks ran): an
// entry waiting on its answer to a conflict is tried again if the attempt's work moved.
func (s *Service) turnEnded(ctx context.Context, name string, n int) { s.wakeQueue() }

// runQueue works the merge queue's open entries, one at a time per repository and
// branch, until ctx ends. Its first look takes up the entries a restart interrupted.
func (s *Service) runQueue(ctx context.Context) {
	q := s.q()
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	// A branch moved in a sandbox may be the answer to a conflict (made by hand there,
	// when its agent could not be told), and so may the end of a plain sandbox's agent's
	// turn (an attempt's comes through turnEnded); a subscription that falls behind is
	// left to the ticks.
	var moved <-chan events.Event
	if s.opts.Bus != nil {
		sub := s.opts.Bus.Subscribe(16, func(ev events.Event) bool { return ev.Kind == guestproto.EventBranchMoved || turnEnd(ev) })
		defer sub.Close()
		moved = sub.C()
	}
	for {
		s.dispatch(ctx)
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		case <-tick.C:
		case _, ok := <-moved:
			if !ok {
				moved = nil
			}
		}
	}
}

// dispatch starts a worker on each lane's first open entry that can be worked, and a
// follower for each pull request's entry that has none.
func (s *Service) dispatch(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	es, err := s.opts.Store.QueueEntries(ctx, "")
	if err != nil {
		s.log.Warn("merge queue", "err", err)
		return
	}
	q := s.q()
	seen := map[string]bool{} // lanes whose first open entry was met
	for _, e := range es {
		if !e.Open() {
			continue
		}
		lane := e.Repo + "\x00" + e.Into
		if e.Mode == wire.QueuePullRequest {
			lane = "pr\x00" + strconv.FormatInt(e.ID, 10)
		}
		if seen[lane] {
			continue
		}
		seen[lane] = true
		q.mu.Lock()
		busy := q.busy[lane]
		q.mu.Unlock()
		if busy || (e.State == wire.QueueConflict && !e.Telling && !s.answered(ctx, e)) {
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		q.mu.Lock()
		q.busy[lane], q.cancels[e.ID] = true, cancel
		q.mu.Unlock()
		s.work.Go(func() {
			defer func() {
				cancel()
				q.mu.Lock()
				delete(q.busy, lane)
				delete(q.cancels, e.ID)
				q.mu.Unlock()
				s.wakeQueue()
			}()
			if e.Mode == wire.QueuePullRequest {
				s.workPR(wctx, e)
			} else {
				s.landEntry(wctx, e)
			}
		})
	}
}

// answered says whether the attempt of an entry in conflict has answered it: its agent
// is not at work (its turn ended and its checks ran) and its sandbox's HEAD is no longer
// the one whose rebase conflicted (the agent, or a user in the sandbox, rebased).
func (s *Service) answered(ctx context.Context, e wire.QueueEntry) bool {
	sandbox := e.Sandbox
	if e.Task != "" {
		t, err := s.opts.Store.GetTask(ctx, e.Task)
		if err != nil {
			return false
		}
		a := attemptOf(&t, e.Attempt)
		if a == nil || a.State != wire.AttemptDone {
			return false
		}
		sandbox = a.Sandbox
	} else if !s.plainAnswered(ctx, e) {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := s.opts.Sandboxes.Client(ctx, sandbox)
	if err != nil {
		return false
	}
	out, _, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"git", "rev-parse", "-q", "--verify", "HEAD"}, Env: gitsync.SandboxGitEnv}, 256)
	head := strings.TrimSpace(out)
	return err == nil && code == 0 && head != "" && head != e.ConflictHead
}

// put writes an entry, unless it was dropped meanwhile (errDropped).
func (s *Service) put(ctx context.Context, e *wire.QueueEntry) error {
	q := s.q()
	q.write.Lock()
	defer q.write.Unlock()
	return s.putLocked(ctx, e)
}

// putLocked is put under q.write.
func (s *Service) putLocked(ctx context.Context, e *wire.QueueEntry) error {
	ctx = context.WithoutCancel(ctx)
	cur, err := s.opts.Store.GetQueueEntry(ctx, e.ID)
	if err != nil {
		return err
	}
	if cur.State == wire.QueueDropped {
		return errDropped
	}
	return s.opts.Store.UpdateQueueEntry(ctx, *e)
}

// landEntry takes a landing entry to its end, or to a conflict; a failure is recorded on it.
// A daemon that stops leaves the entry as its last step wrote it, for its restart.
func (s *Service) landEntry(ctx context.Context, e wire.QueueEntry) {
	err := s.land(ctx, &e)
	if err == nil || errors.Is(err, errDropped) || ctx.Err() != nil {
		return
	}
	e.State, e.Detail = wire.QueueFailed, err.Error()
	if hint := apperr.HintOf(err); hint != "" {
		e.Detail += " (" + hint + ")"
	}
	s.log.Warn("merge queue: landing failed", "task", e.Task, "attempt", e.Attempt, "sandbox", e.Sandbox, "entry", e.ID, "err", err)
	if s.put(ctx, &e) == nil {
		s.settle(ctx, e.Task)
	}
}

// land rebases the attempt's work onto the host branch in its sandbox, checks the
// result there, fetches it and fast-forwards the branch to it; a branch that moved
// meanwhile is rebased onto again.
func (s *Service) land(ctx context.Context, e *wire.QueueEntry) error {
	for range maxRounds {
		x, err := s.subjectOf(ctx, e)
		if err != nil {
			return err
		}
		t, a := x.t, x.a
		g := hostGit(t)
		if e.Commit != "" { // the checks passed on it before a restart
			switch branchTip(ctx, g, e.Into) {
			case e.Commit:
				return s.finish(ctx, g, e, true)
			case e.Onto:
				err := s.finish(ctx, g, e, false)
				if !errors.Is(err, errMoved) {
					return err
				}
			}
		}
		e.State, e.Detail, e.Commit, e.Conflicts, e.ConflictHead = wire.QueueRebasing, "", "", nil, ""
		if err := s.put(ctx, e); err != nil {
			return err
		}
		c, err := s.opts.Sandboxes.Client(ctx, a.Sandbox)
		if err != nil {
			return apperr.Conflict(fmt.Sprintf("start it (paddock start %s), then land again", a.Sandbox), "the sandbox of %s, %s, does not answer: %v", x, a.Sandbox, err)
		}
		r, err := rebaseInSandbox(ctx, g, c, t, a, e.Into)
		var busy *errSandboxBusy
		if errors.As(err, &busy) {
			return s.conflict(ctx, g, e, x, r, busy.what)
		}
		if err != nil {
			return err
		}
		if len(r.Conflicts) > 0 {
			return s.conflict(ctx, g, e, x, r, "")
		}
		e.Onto, e.State = r.Onto, wire.QueueChecking
		if err := s.put(ctx, e); err != nil {
			return err
		}
		// The rebased work comes to the host while the checks run on it: only its
		// landing waits for them.
		fetched := make(chan error, 1)
		go func() { fetched <- fetchRebased(ctx, g, c, t, a, r, e) }()
		results, passed, err := s.runChecks(ctx, a.Sandbox, t.Checks)
		ferr := <-fetched
		if err != nil {
			return fmt.Errorf("the checks could not run on the rebased work: %w", err)
		}
		if !passed {
			return checksFailed(e.Into, r.Onto, results)
		}
		if ferr != nil {
			return ferr
		}
		e.Commit = r.Head
		if err := s.put(ctx, e); err != nil {
			return err
		}
		if err := s.finish(ctx, g, e, false); !errors.Is(err, errMoved) {
			return err
		}
		s.log.Info("merge queue: the branch moved; rebasing again", "task", e.Task, "attempt", e.Attempt, "sandbox", a.Sandbox, "into", e.Into)
	}
	return fmt.Errorf("%s kept moving while the work was landed (%d rebases): land it again", e.Into, maxRounds)
}

// fetchRebased fetches the attempt's rebased work into the host repository and makes
// sure it is what was rebased, on the branch's tip, and (unless the user said yes)
// changes no file that runs code on the host.
func fetchRebased(ctx context.Context, g *gitsync.Git, c *guestclient.Client, t *wire.Task, a *wire.Attempt, r rebased, e *wire.QueueEntry) error {
	refs, err := fetchWork(ctx, g, c, t, a)
	if err != nil {
		return err
	}
	ref := gitsync.Namespace(a.Sandbox) + a.Branch
	if got := refs[ref]; got != r.Head {
		return fmt.Errorf("the branch %s of sandbox %s moved while it was landed (now %s, rebased %s): land it again", a.Branch, a.Sandbox, gitsync.Short(got), gitsync.Short(r.Head))
	}
	if !isAncestor(ctx, g, r.Onto, r.Head) {
		return fmt.Errorf("the rebased work %s does not descend from %s's %s", gitsync.Short(r.Head), e.Into, gitsync.Short(r.Onto))
	}
	if e.Yes {
		return nil
	}
	hc, err := hostCode(ctx, g, ref, r.Onto, r.Head)
	if err != nil {
		return err
	}
	if len(hc) > 0 {
		return apperr.Invalid(fmt.Sprintf("read them (git -C %s diff %s %s), then land again with --yes", t.Repo, gitsync.Short(r.Onto), gitsync.Short(r.Head)),
			"after its rebase, the work changes files that run code on the host once landed: %s", hostCodeList(hc))
	}
	return nil
}

// checksFailed says which checks failed on the rebased work, with the end of the first
// failing one's output.
func checksFailed(into, onto string, results []wire.CheckResult) error {
	tail := ""
	for _, r := range results {
		if r.Exit != 0 {
			tail = strings.TrimSpace(r.Output)
			if len(tail) > 400 {
				tail = "..." + tail[len(tail)-400:]
			}
			break
		}
	}
	msg := fmt.Sprintf("the checks failed on the work rebased onto %s (%s): %s", into, gitsync.Short(onto), failing(results))
	if tail != "" {
		msg += ": " + termtext.Escape(tail)
	}
	return errors.New(msg)
}

// finish moves the host branch to the entry's commit (unless already there) and records
// the landing. The move and the entry's landed state are written under q.write, so Drop
// finds the entry either not yet moving or landed.
func (s *Service) finish(ctx context.Context, g *gitsync.Git, e *wire.QueueEntry, already bool) error {
	q := s.q()
	q.write.Lock()
	cur, err := s.opts.Store.GetQueueEntry(context.WithoutCancel(ctx), e.ID)
	if err == nil && cur.State == wire.QueueDropped {
		err = errDropped
	}
	if err == nil && !already {
		err = moveBranch(ctx, g, e.Into, e.Onto, e.Commit)
	}
	if err == nil {
		e.State, e.Detail = wire.QueueLanded, fmt.Sprintf("%s fast-forwarded to %s", e.Into, gitsync.Short(e.Commit))
		err = s.putLocked(ctx, e)
	}
	q.write.Unlock()
	if err != nil {
		return err
	}
	s.landed(ctx, e, fmt.Sprintf("%s landed on %s (%s)", entryWhat(e), e.Into, gitsync.Short(e.Commit)))
	return nil
}

// entryWhat names what an entry lands, as subject.String does, from the entry alone.
func entryWhat(e *wire.QueueEntry) string {
	if e.Task == "" {
		return fmt.Sprintf("sandbox %s's branch %s", e.Sandbox, termtext.Escape(e.Branch))
	}
	return fmt.Sprintf("attempt %d of task %s", e.Attempt, e.Task)
}

// landed records an attempt's landing (or its pull request's opening) on the task and
// says so.
func (s *Service) landed(ctx context.Context, e *wire.QueueEntry, detail string) {
	if e.Task == "" {
		s.log.Info("merge queue: landed", "sandbox", e.Sandbox, "branch", e.Branch, "into", e.Into, "commit", e.Commit)
		s.emit(ctx, e.Sandbox, EventLanded, detail, map[string]string{"sandbox": e.Sandbox, "branch": e.Branch, "commit": e.Commit, "into": e.Into})
		return
	}
	t, err := s.updateAttempt(ctx, e.Task, e.Attempt, func(t *wire.Task, a *wire.Attempt) error {
		a.State, t.State = wire.AttemptLanded, wire.TaskLanded
		return nil
	})
	if err != nil {
		s.log.Warn("merge queue: record the landing", "task", e.Task, "attempt", e.Attempt, "err", err)
		return
	}
	s.log.Info("merge queue: landed", "task", e.Task, "attempt", e.Attempt, "into", e.Into, "commit", e.Commit)
	attrs := map[string]string{"task": e.Task, "attempt": strconv.Itoa(e.Attempt), "commit": e.Commit, "into": e.Into}
	if e.PR != nil {
		attrs["pr"], attrs["url"] = strconv.Itoa(e.PR.Number), e.PR.URL
	}
	if a := attemptOf(&t, e.Attempt); a != nil {
		s.emit(ctx, a.Sandbox, EventLanded, detail, attrs)
	}
}

// conflict records an entry whose rebase conflicted (or could not start: busy says why),
// tells the agent of the attempt (or of the plain sandbox, if it has one) what conflicts
// with what and what to do, and leaves the entry waiting on its answer.
func (s *Service) conflict(ctx context.Context, g *gitsync.Git, e *wire.QueueEntry, x subject, r rebased, busy string) error {
	t, a := x.t, x.a
	e.State, e.Onto, e.ConflictHead, e.Conflicts = wire.QueueConflict, r.Onto, r.Head, nil
	for _, f := range r.Conflicts {
		e.Conflicts = append(e.Conflicts, termtext.Escape(f))
	}
	var msg string
	if busy != "" {
		e.Detail = busy + "; its agent was told"
		msg = fmt.Sprintf("Your work on branch %s could not be landed on %s: %s. Finish or abort that, commit your work on %s, and end your turn; the merge queue tries again when you are done.",
			a.Branch, e.Into, busy, a.Branch)
	} else {
		since := landedSince(ctx, g, t.Base, r.Onto, r.Conflicts)
		e.Detail = fmt.Sprintf("the rebase onto %s (%s) conflicts in %s", e.Into, gitsync.Short(r.Onto), strings.Join(e.Conflicts, ", "))
		with := ""
		if len(since) > 0 {
			e.Detail += " with " + strings.Join(since, "; ")
			with = fmt.Sprintf(" with what landed on %s since you started (%s)", e.Into, strings.Join(since, "; "))
		}
		e.Detail += "; its agent was told"
		msg = fmt.Sprintf("Your work on branch %s could not be landed on %s: rebasing it onto %s conflicts in %s%s. "+
			"%s as it is now is in this repository as paddock/onto. Rebase your branch onto it (git rebase paddock/onto), "+
			"resolve the conflicts keeping the intent of both sides, and commit (git rebase --continue); the merge queue tries again when you are done.",
			a.Branch, e.Into, e.Into, strings.Join(e.Conflicts, ", "), with, e.Into)
	}
	if x.plain() {
		return s.conflictPlain(ctx, e, x, msg)
	}
	// Telling until the message is sent: a stop before then leaves the entry to be tried
	// again (dispatch), so that the agent is told after all.
	e.Telling = true
	if err := s.put(ctx, e); err != nil {
		return err
	}
	// At work before it is told, so that the end of its turn, however soon, is seen.
	s.updateAttempt(ctx, t.Name, a.N, func(_ *wire.Task, a *wire.Attempt) error {
		if a.State != wire.AttemptDone {
			return errSkip
		}
		a.State, a.Ended = wire.AttemptWorking, time.Time{}
		return nil
	})
	err := s.opts.Sessions.SendTurn(ctx, a.Sandbox, a.Session, msg)
	e.Telling = false
	if err != nil {
		s.updateAttempt(ctx, t.Name, a.N, func(_ *wire.Task, x *wire.Attempt) error {
			if x.State != wire.AttemptWorking {
				return errSkip
			}
			x.State, x.Ended = wire.AttemptDone, a.Ended
			return nil
		})
		e.Detail = strings.TrimSuffix(e.Detail, "; its agent was told") + fmt.Sprintf("; its agent could not be told (%v): resolve it in sandbox %s, or drop the entry (paddock task drop %d)", err, a.Sandbox, e.ID)
	}
	if err := s.put(ctx, e); err != nil {
		return err
	}
	s.emit(ctx, a.Sandbox, EventConflict, fmt.Sprintf("attempt %d of task %s conflicts with %s: %s", a.N, t.Name, e.Into, e.Detail),
		map[string]string{"task": t.Name, "attempt": strconv.Itoa(a.N), "into": e.Into, "files": strings.Join(e.Conflicts, ",")})
	return nil
}

// settle puts a landing task whose entries have all ended back to what its attempts
// say: landed if one did, else running or done.
func (s *Service) settle(ctx context.Context, name string) {
	if name == "" { // a plain sandbox's entry: no task to settle
		return
	}
	es, _ := s.opts.Store.QueueEntries(ctx, name)
	for _, e := range es {
		if e.Open() {
			return
		}
	}
	s.update(ctx, name, func(t *wire.Task) error {
		if t.State != wire.TaskLanding {
			return errSkip
		}
		t.State = wire.TaskDone
		for _, a := range t.Attempts {
			switch a.State {
			case wire.AttemptLanded:
				t.State = wire.TaskLanded
				return nil
			case wire.AttemptStarting, wire.AttemptWorking, wire.AttemptChecking:
				t.State = wire.TaskRunning
			}
		}
		return nil
	})
}
