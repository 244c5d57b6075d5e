package task

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/termtext"
)

// A plain sandbox's branch in the merge queue (paddock merge --queue): an entry that
// names the sandbox, its branch, the commit it started from and the checks, in the lane
// of its host repository and branch beside the tasks' landings, landed by the same
// steps (land). A conflict is told to the sandbox's agent session when it has one that
// runs; else the entry says to resolve it in the sandbox, and is tried again once the
// sandbox's HEAD has moved.

// LandSandbox puts a plain sandbox's branch in the merge queue of its host repository and
// branch. It refuses, changing nothing, a sandbox made from no host repository, a branch
// other than the one its /workspace has checked out, a host branch that does not exist,
// a sandbox in the queue already, and work that changes files that run code on the host
// once landed unless req.Yes.
func (s *Service) LandSandbox(ctx context.Context, name string, req wire.SandboxLandRequest) (wire.QueueEntry, error) {
	sb, err := s.opts.Sandboxes.Record(ctx, name)
	if err != nil {
		return wire.QueueEntry{}, err
	}
	if sb.SourcePath == "" || sb.BaseCommit == "" {
		return wire.QueueEntry{}, apperr.Invalid("push its branch from the sandbox instead", "sandbox %s was not made from a host repository: there is no branch to land it on", name)
	}
	for _, c := range req.Checks {
		if strings.TrimSpace(c) == "" {
			return wire.QueueEntry{}, apperr.Invalid("give each --check a command", "an empty check")
		}
	}
	g := &gitsync.Git{Repo: filepath.Clean(sb.SourcePath)}
	into := req.Into
	if into == "" {
		out, err := g.Run(ctx, "symbolic-ref", "-q", "--short", "HEAD")
		if into = strings.TrimSpace(out); err != nil || into == "" {
			return wire.QueueEntry{}, apperr.Invalid("give the branch to land on: --into BRANCH", "the host repository %s is on no branch", g.Repo)
		}
	}
	if !validBranch(ctx, g, into) {
		return wire.QueueEntry{}, apperr.Invalid("", "%q is not a branch name", termtext.Escape(into))
	}
	if branchTip(ctx, g, into) == "" {
		return wire.QueueEntry{}, apperr.NotFound("create it, or land on another: --into BRANCH", "the host repository %s has no branch %s", g.Repo, into)
	}
	branch := req.Branch
	if branch == "" {
		c, err := s.opts.Sandboxes.Client(ctx, name)
		if err != nil {
			return wire.QueueEntry{}, apperr.Conflict(fmt.Sprintf("start it: paddock start %s", name), "sandbox %s does not answer: %v", name, err)
		}
		if branch, err = gitsync.CurrentBranch(ctx, guestStream(c)); err != nil {
			return wire.QueueEntry{}, err
		}
		if branch == "" {
			return wire.QueueEntry{}, apperr.Conflict(fmt.Sprintf("check a branch out in it (paddock exec %s -- git switch BRANCH), then land again", name),
				"sandbox %s's /workspace is on no branch", name)
		}
	}
	e := wire.QueueEntry{Repo: g.Repo, Into: into, State: wire.QueueWaiting, Mode: wire.QueueLand, Yes: req.Yes,
		Sandbox: name, Branch: branch, Base: sb.BaseCommit, Checks: req.Checks}
	x, _ := s.subjectOf(ctx, &e)
	if err := s.notQueued(ctx, x); err != nil {
		return wire.QueueEntry{}, err
	}
	e, err = s.admit(ctx, g, x, e)
	if err != nil {
		return e, err
	}
	s.log.Info("merge queue", "sandbox", name, "branch", branch, "entry", e.ID, "into", into)
	s.wakeQueue()
	return e, nil
}

// conflictPlain tells a plain sandbox's conflict (msg) to its agent session, when it has
// one that runs, and records the entry waiting on the answer.
func (s *Service) conflictPlain(ctx context.Context, e *wire.QueueEntry, x subject, msg string) error {
	sandbox := x.a.Sandbox
	e.Session = s.agentSession(ctx, sandbox)
	e.Detail = strings.TrimSuffix(e.Detail, "; its agent was told")
	if e.Session != "" {
		e.Telling = true
		if err := s.put(ctx, e); err != nil {
			return err
		}
		err := s.opts.Sessions.SendTurn(ctx, sandbox, e.Session, msg)
		e.Telling = false
		if err == nil {
			e.Detail += fmt.Sprintf("; its agent (session %s) was told", e.Session)
		} else {
			e.Detail += fmt.Sprintf("; its agent could not be told (%v)", err)
			e.Session = ""
		}
	}
	if e.Session == "" {
		e.Detail += fmt.Sprintf(": resolve it in sandbox %s (rebase %s onto paddock/onto there), and the queue tries again; or drop the entry (paddock task drop %d)",
			sandbox, termtext.Escape(x.a.Branch), e.ID)
	}
	if err := s.put(ctx, e); err != nil {
		return err
	}
	s.emit(ctx, sandbox, EventConflict, fmt.Sprintf("%s conflicts with %s: %s", x, e.Into, e.Detail),
		map[string]string{"sandbox": sandbox, "branch": x.a.Branch, "into": e.Into, "files": strings.Join(e.Conflicts, ",")})
	return nil
}

// agentSession is the sandbox's first agent session that runs, or "". A shell session
// is no agent to tell: what is typed there runs.
func (s *Service) agentSession(ctx context.Context, sandbox string) string {
	if s.opts.Sessions == nil {
		return ""
	}
	ss, err := s.opts.Sessions.List(ctx, sandbox)
	if err != nil {
		return ""
	}
	for _, se := range ss {
		if se.Agent == "shell" {
			continue
		}
		switch se.Status {
		case "working", "waiting", "idle", "running":
			return se.Name
		}
	}
	return ""
}

// plainAnswered says whether the agent told of a plain sandbox's conflict is done with
// its turn (always, when no agent was told): its HEAD is then worth a look.
func (s *Service) plainAnswered(ctx context.Context, e wire.QueueEntry) bool {
	if e.Session == "" || s.opts.Sessions == nil {
		return true
	}
	ss, err := s.opts.Sessions.List(ctx, e.Sandbox)
	if err != nil {
		return false
	}
	for _, se := range ss {
		if se.Name == e.Session {
			return se.Status != "working" && se.Status != "starting"
		}
	}
	return true
}

// NotLanding refuses a merge without the queue into a branch of a repository (empty: the
// branch the repository has checked out) while the queue lands an entry there, so that
// the two never move the branch at once. An entry waiting on a conflict's answer, or a
// pull request, lands nothing meanwhile.
func (s *Service) NotLanding(ctx context.Context, repo, branch string) error {
	repo = filepath.Clean(repo)
	if branch == "" {
		out, err := (&gitsync.Git{Repo: repo}).Run(ctx, "symbolic-ref", "-q", "--short", "HEAD")
		if branch = strings.TrimSpace(out); err != nil || branch == "" {
			return nil
		}
	}
	es, err := s.opts.Store.QueueEntries(ctx, "")
	if err != nil {
		return err
	}
	for _, e := range es {
		if !e.Open() || e.Mode == wire.QueuePullRequest || e.State == wire.QueueConflict ||
			e.Into != branch || filepath.Clean(e.Repo) != repo {
			continue
		}
		return apperr.Conflict("wait for it to end (paddock task queue), or land through the queue too: paddock merge SANDBOX --queue",
			"the merge queue is landing %s on %s (entry %d, %s): not merged", entryWhat(&e), branch, e.ID, e.State)
	}
	return nil
}
