package wire

import "time"

// The states of a task (Task.State).
const (
	TaskPreparing = "preparing" // the base is made and the attempts' sandboxes started
	TaskRunning   = "running"   // at least one attempt's agent is at work
	TaskDone      = "done"      // every attempt's agent has ended its turn and been checked
	TaskLanding   = "landing"   // an attempt is in the merge queue
	TaskLanded    = "landed"    // an attempt landed (or its pull request was opened)
	TaskFailed    = "failed"    // no attempt could start: Error says why
)

// The states of an attempt (Attempt.State).
const (
	AttemptStarting = "starting" // its sandbox is made and its agent started
	AttemptWorking  = "working"  // its agent is at work
	AttemptChecking = "checking" // its agent's turn ended; the checks run
	AttemptDone     = "done"     // its agent's turn ended and the checks ran on its work
	AttemptFailed   = "failed"   // its sandbox or agent could not start: Error says why
	AttemptLanded   = "landed"
)

// TaskCreateRequest is the body of POST /v1/tasks.
type TaskCreateRequest struct {
	// Name is the task's name; empty: one made from the prompt.
	Name string `json:"name,omitempty"`
	// Repo is the host repository, an absolute path on the daemon's machine.
	Repo string `json:"repo"`
	// Base is the commit the attempts start from; empty: the repository's HEAD.
	Base string `json:"base,omitempty"`
	// Branch is the branch a landing goes into by default; empty: the repository's
	// current branch.
	Branch string `json:"branch,omitempty"`
	Prompt string `json:"prompt"`
	// Attempts are the agents to try, one attempt each.
	Attempts []AttemptSpec `json:"attempts"`
	// Checks are shell commands run in /workspace of an attempt's sandbox; all must exit
	// 0 for the attempt to pass.
	Checks []string `json:"checks,omitempty"`
	// Setup is a shell command run once in the prepared base, before it is copied into
	// every attempt's sandbox.
	Setup string `json:"setup,omitempty"`
	// Backend is the attempts' backend unless an AttemptSpec names its own.
	Backend string `json:"backend,omitempty"`
	// Judge is the agent that reviews each attempt's diff and gives it a score; "auto"
	// picks one of another vendor than the attempts; empty: no judge.
	Judge string `json:"judge,omitempty"`
}

// AttemptSpec is one attempt to start: an agent kind and, optionally, its own backend.
type AttemptSpec struct {
	Agent   string `json:"agent"`
	Backend string `json:"backend,omitempty"`
}

// Task is a prompt tried by several agents in parallel, each attempt checked and ranked.
type Task struct {
	Name    string   `json:"name"`
	Repo    string   `json:"repo"`
	Base    string   `json:"base"`
	Branch  string   `json:"branch"`
	Prompt  string   `json:"prompt"`
	Checks  []string `json:"checks,omitempty"`
	Setup   string   `json:"setup,omitempty"`
	Backend string   `json:"backend,omitempty"`
	Judge   string   `json:"judge,omitempty"`
	State   string   `json:"state"`
	Error   string   `json:"error,omitempty"`
	// Attempts are in rank order: the best first (Rank 1).
	Attempts []Attempt `json:"attempts"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// Best is the attempt ranked first, or nil when there is none.
func (t *Task) Best() *Attempt {
	for i := range t.Attempts {
		if t.Attempts[i].Rank == 1 {
			return &t.Attempts[i]
		}
	}
	return nil
}

// Attempt is one agent's try at a task, in a sandbox of its own.
type Attempt struct {
	// N numbers the attempts of a task from 1, in the order they were asked for.
	N       int    `json:"n"`
	Agent   string `json:"agent"`
	Backend string `json:"backend"`
	Sandbox string `json:"sandbox"`
	Session string `json:"session"`
	// Branch is the branch the attempt's work is on in its sandbox: task/TASK/N, made at
	// the task's base. Its sandbox is TASK-N, and its session is named after its agent.
	Branch string `json:"branch"`
	State  string `json:"state"`
	Error  string `json:"error,omitempty"`
	// Head is the commit the last checks ran on (with the work not yet committed, if
	// Dirty).
	Head  string `json:"head,omitempty"`
	Dirty bool   `json:"dirty,omitempty"`
	// Checks are the results of the last run of the task's checks.
	Checks []CheckResult `json:"checks,omitempty"`
	// Passed is whether every check exited 0 in the last run; nil before any ran.
	Passed *bool `json:"passed,omitempty"`
	// CheckRuns counts the runs of the checks.
	CheckRuns int      `json:"check_runs,omitempty"`
	Diff      DiffStat `json:"diff"`
	// Usage is what the attempt's agent spent, as the credential proxy counted it.
	Usage   UsageSum  `json:"usage"`
	Started time.Time `json:"started"`
	// Ended is when its agent's turn last ended; zero while it works.
	Ended   time.Time `json:"ended,omitzero"`
	Verdict *Verdict  `json:"verdict,omitempty"`
	Reviews []Review  `json:"reviews,omitempty"`
	// Rank is the attempt's place, from 1 (the best); Why says what put it there, in
	// words ("checks pass; judge 8/10; 12 lines smaller than #2": "#2" is the attempt
	// ranked second).
	Rank int    `json:"rank"`
	Why  string `json:"why,omitempty"`
}

// Elapsed is how long the attempt's agent has worked: to its turn's end, or to now.
func (a *Attempt) Elapsed(now time.Time) time.Duration {
	if a.Started.IsZero() {
		return 0
	}
	if !a.Ended.IsZero() {
		return a.Ended.Sub(a.Started)
	}
	return now.Sub(a.Started)
}

// DiffStat is the size of an attempt's work against the task's base.
type DiffStat struct {
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
}

// Lines is the lines the diff adds and removes.
func (d DiffStat) Lines() int { return d.Insertions + d.Deletions }

// CheckResult is one check command's run in an attempt's sandbox.
type CheckResult struct {
	Command string `json:"command"`
	Exit    int    `json:"exit"`
	// Output is the end of what it wrote (stdout and stderr together).
	Output string    `json:"output"`
	Millis int64     `json:"millis"`
	At     time.Time `json:"at"`
}

// Verdict is the judge's score of an attempt.
type Verdict struct {
	Judge string `json:"judge"`
	// Score is from 0 (worst) to 10 (best).
	Score  int       `json:"score"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	// Error says why the judge gave no score, when it gave none.
	Error string `json:"error,omitempty"`
}

// Review is a comment sent to an attempt's agent.
type Review struct {
	File    string    `json:"file,omitempty"`
	Line    int       `json:"line,omitempty"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// ReviewRequest is the body of POST /v1/tasks/{name}/attempts/{n}/review.
type ReviewRequest struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// LandRequest is the body of POST /v1/tasks/{name}/land.
type LandRequest struct {
	// Attempt is the attempt to land; 0: the best one, which must have passed its checks.
	Attempt int `json:"attempt,omitempty"`
	// Into is the host branch to land on; empty: the task's branch.
	Into string `json:"into,omitempty"`
	// PR opens a pull request on the repository's remote instead of landing on the host.
	PR bool `json:"pr,omitempty"`
	// Remote is the remote the pull request's branch is pushed to (default origin).
	Remote string `json:"remote,omitempty"`
	// Yes lands even when the work changes files that run code on the host once landed
	// (git hooks, .envrc, Makefiles...); without it such a landing is refused, naming them.
	Yes bool `json:"yes,omitempty"`
}

// SandboxLandRequest is the body of POST /v1/sandboxes/{name}/land: a plain sandbox's
// branch put through the merge queue (paddock merge --queue).
type SandboxLandRequest struct {
	// Branch is the sandbox's branch to land; empty: the one its /workspace has checked
	// out (it must be that one).
	Branch string `json:"branch,omitempty"`
	// Into is the host branch to land on; empty: the host repository's current branch.
	Into string `json:"into,omitempty"`
	// Checks are the commands run in the sandbox on the rebased work; the branch lands
	// only if they all pass.
	Checks []string `json:"checks,omitempty"`
	// Yes lands even when the work changes files that run code on the host once landed.
	Yes bool `json:"yes,omitempty"`
}

// The states of a merge queue entry (QueueEntry.State).
const (
	QueueWaiting  = "waiting"  // behind another entry of its repository and branch
	QueueRebasing = "rebasing" // rebased onto the branch in the attempt's sandbox
	QueueChecking = "checking" // the checks run on the rebased work
	QueueConflict = "conflict" // the rebase conflicted; the attempt's agent was told
	QueueLanded   = "landed"   // the host branch was fast-forwarded to Commit
	QueueFailed   = "failed"   // the checks failed on the rebased work, or landing failed
	QueueDropped  = "dropped"  // a user dropped it
	QueuePR       = "pr"       // pushed, its pull request open (PR says)
)

// The modes of a merge queue entry (QueueEntry.Mode).
const (
	QueueLand        = "land" // rebased, checked, and the host branch fast-forwarded
	QueuePullRequest = "pr"   // pushed to the remote and a pull request opened
)

// QueueEntry is one attempt's way to its host branch: a landing or a pull request.
type QueueEntry struct {
	ID      int64  `json:"id"`
	Task    string `json:"task"`
	Attempt int    `json:"attempt"`
	Repo    string `json:"repo"`
	Into    string `json:"into"`
	State   string `json:"state"`
	Detail  string `json:"detail,omitempty"`
	// Mode is QueueLand (the host branch fast-forwarded) or QueuePullRequest.
	Mode string `json:"mode,omitempty"`
	// Remote is the remote a pull request's branch is pushed to (QueuePullRequest), a
	// name of the host repository's or an https URL; empty: origin.
	Remote string `json:"remote,omitempty"`
	// Yes says the user accepted the files that run code on the host once landed.
	Yes bool `json:"yes,omitempty"`
	// Onto is the branch's commit the work was last rebased onto; Commit the rebased
	// work's, which the branch is fast-forwarded to.
	Onto   string `json:"onto,omitempty"`
	Commit string `json:"commit,omitempty"`
	// Conflicts are the files the last rebase conflicted on.
	Conflicts []string `json:"conflicts,omitempty"`
	// ConflictHead is the attempt's Head when its rebase conflicted: the entry is tried
	// again once its agent has ended a turn with other work.
	ConflictHead string `json:"conflict_head,omitempty"`
	// Telling says the attempt's agent is being sent the conflict: an entry that a
	// daemon's stop leaves so was perhaps never told, and is tried again from the rebase.
	Telling bool         `json:"telling,omitempty"`
	PR      *PullRequest `json:"pr,omitempty"`
	// Sandbox, Branch, Base and Checks say what a plain sandbox's entry lands (paddock
	// merge --queue; Task is empty): the sandbox's branch, the commit the sandbox started
	// from, and the checks run on the rebased work.
	Sandbox string   `json:"sandbox,omitempty"`
	Branch  string   `json:"branch,omitempty"`
	Base    string   `json:"base,omitempty"`
	Checks  []string `json:"checks,omitempty"`
	// Session is the agent session of a plain sandbox that its conflict was told to.
	Session string    `json:"session,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Open says the entry has not reached an end (landed, failed, dropped, or a pull
// request merged or closed).
func (e *QueueEntry) Open() bool {
	switch e.State {
	case QueueLanded, QueueFailed, QueueDropped:
		return false
	case QueuePR:
		return e.PR == nil || e.PR.State == "open"
	}
	return true
}

// PullRequest is what a task's landing opened on the repository's forge.
type PullRequest struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
	// State is open, closed or merged.
	State  string `json:"state"`
	Remote string `json:"remote"`
	Branch string `json:"branch"`
}
