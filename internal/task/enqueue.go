package task

import (
	"context"
	"fmt"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/termtext"
)

// Land puts an attempt in the merge queue of its host repository and branch, or opens
// its pull request. It refuses, changing nothing, an attempt that has not passed the
// task's checks, is still at work, could not start, has landed or is in the queue
// already, a branch the host repository does not have, and work that changes files that
// run code on the host once landed unless req.Yes.
func (s *Service) Land(ctx context.Context, name string, req wire.LandRequest) (wire.QueueEntry, error) {
	t, err := s.Get(ctx, name)
	if err != nil {
		return wire.QueueEntry{}, err
	}
	a, err := landable(&t, req.Attempt)
	if err != nil {
		return wire.QueueEntry{}, err
	}
	into := req.Into
	if into == "" {
		into = t.Branch
	}
	if into == "" {
		return wire.QueueEntry{}, apperr.Invalid(fmt.Sprintf("give --into BRANCH: paddock task land %s --into BRANCH", name),
			"task %s has no branch to land on (its repository was on no branch when it was made)", name)
	}
	g := hostGit(&t)
	if !validBranch(ctx, g, into) {
		return wire.QueueEntry{}, apperr.Invalid("", "%q is not a branch name", termtext.Escape(into))
	}
	if !req.PR && branchTip(ctx, g, into) == "" {
		return wire.QueueEntry{}, apperr.NotFound("create it, or land on another: --into BRANCH", "the host repository %s has no branch %s", t.Repo, into)
	}
	x := subject{&t, a}
	if err := s.notQueued(ctx, x); err != nil {
		return wire.QueueEntry{}, err
	}
	if req.PR {
		if err := s.prReady(ctx, t.Repo, req.Remote); err != nil {
			return wire.QueueEntry{}, err
		}
	}
	e := wire.QueueEntry{Task: name, Attempt: a.N, Repo: t.Repo, Into: into, State: wire.QueueWaiting, Mode: wire.QueueLand, Yes: req.Yes}
	if req.PR {
		e.Mode, e.Remote = wire.QueuePullRequest, req.Remote
	}
	e, err = s.admit(ctx, g, x, e)
	if err != nil {
		return e, err
	}
	s.update(ctx, name, func(t *wire.Task) error {
		t.State = wire.TaskLanding
		return nil
	})
	s.log.Info("merge queue", "task", name, "attempt", a.N, "entry", e.ID, "into", into, "mode", e.Mode)
	s.wakeQueue()
	return e, nil
}

// admit puts an entry for the subject's work in the queue, once its sandbox answers with
// its branch checked out, its work is fetched, and (for a landing, unless e.Yes) the work
// changes no file that runs code on the host once landed. Nothing is changed when it
// refuses.
func (s *Service) admit(ctx context.Context, g *gitsync.Git, x subject, e wire.QueueEntry) (wire.QueueEntry, error) {
	t, a := x.t, x.a
	c, err := s.opts.Sandboxes.Client(ctx, a.Sandbox)
	if err != nil {
		return wire.QueueEntry{}, apperr.Conflict(fmt.Sprintf("start it: paddock start %s", a.Sandbox),
			"the sandbox of %s, %s, does not answer: %v", x, a.Sandbox, err)
	}
	cur, err := gitsync.CurrentBranch(ctx, guestStream(c))
	if err != nil {
		return wire.QueueEntry{}, err
	}
	if cur != a.Branch {
		what := "the branch " + termtext.Escape(a.Branch)
		if !x.plain() {
			what = fmt.Sprintf("the branch %s of attempt %d", a.Branch, a.N)
		}
		return wire.QueueEntry{}, apperr.Conflict(fmt.Sprintf("switch to it (paddock exec %s -- git switch %s), then land again", a.Sandbox, termtext.Escape(a.Branch)),
			"sandbox %s has %q checked out, not %s", a.Sandbox, termtext.Escape(cur), what)
	}
	refs, err := fetchWork(ctx, g, c, t, a)
	if err != nil {
		return wire.QueueEntry{}, err
	}
	ns := gitsync.Namespace(a.Sandbox)
	work := refs[ns+gitsync.WIPBranch] // the branch, with its uncommitted work on top if any
	if work == "" {
		work = refs[ns+a.Branch]
	}
	if work == "" {
		return wire.QueueEntry{}, fmt.Errorf("sandbox %s has no branch %s", a.Sandbox, a.Branch)
	}
	if e.Mode == wire.QueueLand && !e.Yes {
		// From where the work meets the branch: the work may have been rebased onto it
		// by an earlier landing, and what landed since the base is not the work's.
		from := t.Base
		if mb, err := g.Run(ctx, "merge-base", branchTip(ctx, g, e.Into), work); err == nil {
			from = strings.TrimSpace(mb)
		}
		hc, err := hostCode(ctx, g, ns+a.Branch, from, work)
		if err != nil {
			return wire.QueueEntry{}, err
		}
		if len(hc) > 0 {
			return wire.QueueEntry{}, apperr.Invalid(fmt.Sprintf("read them (git -C %s diff %s %s), then land again with --yes", t.Repo, gitsync.Short(from), gitsync.Short(work)),
				"%s changes files that run code on the host once landed: %s", x, hostCodeList(hc))
		}
	}
	q := s.q()
	q.write.Lock()
	defer q.write.Unlock()
	if err := s.notQueued(ctx, x); err != nil {
		return wire.QueueEntry{}, err
	}
	return s.opts.Store.AddQueueEntry(context.WithoutCancel(ctx), e)
}

// notQueued refuses a subject that has an open entry in the queue already.
func (s *Service) notQueued(ctx context.Context, x subject) error {
	e, ok := s.openEntry(ctx, x)
	if !ok {
		return nil
	}
	follow := "paddock task queue"
	if !x.plain() {
		follow += " " + x.t.Name
	}
	return apperr.Conflict(fmt.Sprintf("follow it: %s; take it out: paddock task drop %d", follow, e.ID),
		"%s is in the merge queue already (entry %d, %s)", entryWhat(&e), e.ID, e.State)
}

// landable is the attempt a landing asks for (n, or the best when 0), if it may land.
func landable(t *wire.Task, n int) (*wire.Attempt, error) {
	show := fmt.Sprintf("paddock task show %s", t.Name)
	var a *wire.Attempt
	if n == 0 {
		if a = t.Best(); a == nil {
			return nil, apperr.Invalid("", "task %s has no attempts", t.Name)
		}
	} else if a = attemptOf(t, n); a == nil {
		return nil, apperr.NotFound(fmt.Sprintf("`%s` lists its attempts", show), "task %s has no attempt %d", t.Name, n)
	}
	switch a.State {
	case wire.AttemptStarting, wire.AttemptWorking, wire.AttemptChecking:
		return nil, apperr.Conflict(fmt.Sprintf("wait for its agent's turn to end and its checks (%s)", show),
			"attempt %d of task %s is still %s", a.N, t.Name, a.State)
	case wire.AttemptFailed:
		return nil, apperr.Invalid(fmt.Sprintf("land another: paddock task land %s --attempt N (%s)", t.Name, show),
			"attempt %d of task %s could not start: %s", a.N, t.Name, a.Error)
	case wire.AttemptLanded:
		return nil, apperr.Conflict(show, "attempt %d of task %s has landed already", a.N, t.Name)
	}
	if len(t.Checks) > 0 && (a.Passed == nil || !*a.Passed) {
		what := "did not pass its checks"
		if a.Passed == nil {
			what = "has not been checked"
		}
		if n == 0 {
			return nil, apperr.Invalid(fmt.Sprintf("review an attempt (paddock task review %s/N MESSAGE) and land it once its checks pass (%s)", t.Name, show),
				"no attempt of task %s passed its checks: the best, attempt %d, %s", t.Name, a.N, what)
		}
		return nil, apperr.Invalid(fmt.Sprintf("review it (paddock task review %s/%d MESSAGE) and land it once its checks pass, or land another (%s)", t.Name, a.N, show),
			"attempt %d of task %s %s", a.N, t.Name, what)
	}
	return a, nil
}

// openEntry is the open queue entry of a subject (an attempt, or a plain sandbox), if
// there is one.
func (s *Service) openEntry(ctx context.Context, x subject) (wire.QueueEntry, bool) {
	es, _ := s.opts.Store.QueueEntries(ctx, x.t.Name)
	for _, e := range es {
		same := e.Task == x.t.Name && e.Attempt == x.a.N
		if x.plain() {
			same = e.Task == "" && e.Sandbox == x.a.Sandbox
		}
		if same && e.Open() {
			return e, true
		}
	}
	return wire.QueueEntry{}, false
}
