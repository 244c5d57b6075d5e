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
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// CheckTimeout bounds one check command's run.
const CheckTimeout = 10 * time.Minute

// checkOutputKept is how much of the end of a check's output is kept.
const checkOutputKept = 2048

// runChecks runs each check in /workspace of a sandbox, in order, each to its end
// whatever the one before did (the user reads every result), and says whether all
// passed. An error is the sandbox not answering: no result is then recorded.
func (s *Service) runChecks(ctx context.Context, sandboxName string, checks []string) ([]wire.CheckResult, bool, error) {
	c, err := s.opts.Sandboxes.Client(ctx, sandboxName)
	if err != nil {
		return nil, false, err
	}
	return runChecksOn(ctx, c, checks)
}

// runChecksOn is runChecks on a guest connection.
func runChecksOn(ctx context.Context, c *guestclient.Client, checks []string) ([]wire.CheckResult, bool, error) {
	passed := true
	out := make([]wire.CheckResult, 0, len(checks))
	for _, cmd := range checks {
		r, err := runCheck(ctx, c, cmd)
		if err != nil {
			return nil, false, err
		}
		passed = passed && r.Exit == 0
		out = append(out, r)
	}
	return out, passed, nil
}

func runCheck(ctx context.Context, c *guestclient.Client, cmd string) (wire.CheckResult, error) {
	cctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	buf := &tailbuf.Buffer{Max: checkOutputKept}
	start := time.Now()
	code, err := c.Exec(cctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", cmd}, Dir: inside.Workspace, Stdout: buf, Stderr: buf})
	r := wire.CheckResult{Command: cmd, Exit: code, Millis: time.Since(start).Milliseconds(), At: start}
	var startErr *guestclient.ExecStartError
	switch {
	case errors.As(err, &startErr):
		r.Exit = 127
		fmt.Fprintf(buf, "%v\n", err)
	case err != nil && cctx.Err() != nil && ctx.Err() == nil:
		r.Exit = 124
		fmt.Fprintf(buf, "paddock: the check ran longer than %v and was stopped\n", CheckTimeout)
	case err != nil:
		return r, err
	}
	r.Output = buf.String()
	return r, nil
}

// checkRuns are the attempts' check runs under way, by "task/n": never two of one
// attempt at once, and a request during a run runs once more after it.
type checkRuns struct {
	mu sync.Mutex
	// again says, of a run under way, whether another was asked for meanwhile.
	again map[string]bool
}

// requestChecks runs an attempt's checks in the daemon, now or, when a run is under
// way, once more after it.
func (s *Service) requestChecks(ctx context.Context, name string, n int) {
	key := fmt.Sprintf("%s/%d", name, n)
	s.runs.mu.Lock()
	if s.runs.again == nil {
		s.runs.again = map[string]bool{}
	}
	if _, running := s.runs.again[key]; running {
		s.runs.again[key] = true
		s.runs.mu.Unlock()
		return
	}
	s.runs.again[key] = false
	s.runs.mu.Unlock()
	s.work.Go(func() {
		for {
			s.checkAttempt(ctx, name, n)
			s.runs.mu.Lock()
			if !s.runs.again[key] || ctx.Err() != nil {
				delete(s.runs.again, key)
				s.runs.mu.Unlock()
				return
			}
			s.runs.again[key] = false
			s.runs.mu.Unlock()
		}
	})
}

// workScript prints the commit HEAD is at, whether the work tree has changes, and the
// diff's numstat against the base ($1), the files git does not yet track included: it
// stages everything in a copy of the index, so the agent's own index is left as it is.
const workScript = `set -e
cd /workspace
echo "head $(git rev-parse -q --verify HEAD || true)"
if [ -n "$(git status --porcelain --untracked-files=normal)" ]; then echo dirty 1; else echo dirty 0; fi
` + stageInCopy + `GIT_INDEX_FILE=$index git diff --cached --numstat --no-renames "$1"
`

// stageInCopy is shell that stages everything in the work tree, the files git does not
// track yet included, in a copy of the index at $index (removed on exit), so that the
// agent's own index is left as it is.
const stageInCopy = `index=$(mktemp)
trap 'rm -f "$index"' EXIT
idx=$(git rev-parse --git-path index)
if [ -f "$idx" ]; then cp "$idx" "$index"; else rm -f "$index"; fi
GIT_INDEX_FILE=$index git add -A .
`

// work is what workScript says of an attempt's work.
type work struct {
	head  string
	dirty bool
	diff  wire.DiffStat
}

// readWork reads an attempt's work in its sandbox against the task's base.
func readWork(ctx context.Context, c *guestclient.Client, base string) (work, error) {
	var w work
	stdout, stderr, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", workScript, "sh", base}}, 1<<20)
	if err != nil {
		return w, err
	}
	if code != 0 {
		return w, fmt.Errorf("read the work in /workspace: exit %d: %s", code, strings.TrimSpace(stderr))
	}
	for line := range strings.SplitSeq(stdout, "\n") {
		switch f := strings.Split(line, "\t"); {
		case strings.HasPrefix(line, "head "):
			w.head = strings.TrimPrefix(line, "head ")
		case line == "dirty 1":
			w.dirty = true
		case len(f) == 3:
			w.diff.Files++
			ins, _ := strconv.Atoi(f[0]) // "-" for a binary file: no lines
			del, _ := strconv.Atoi(f[1])
			w.diff.Insertions += ins
			w.diff.Deletions += del
		}
	}
	return w, nil
}

// checkAttempt runs the task's checks on an attempt's work and records the results,
// what the work is (its head, its diff against the base) and what its agent spent; then
// the judge, the merge queue, and the task's end when every attempt is done.
func (s *Service) checkAttempt(ctx context.Context, name string, n int) {
	t, err := s.updateAttempt(ctx, name, n, func(_ *wire.Task, a *wire.Attempt) error {
		switch a.State {
		case wire.AttemptFailed, wire.AttemptStarting, wire.AttemptLanded:
			return errSkip
		}
		a.State = wire.AttemptChecking
		if a.Ended.IsZero() {
			a.Ended = s.opts.Now()
		}
		return nil
	})
	if err != nil {
		return
	}
	a := *attemptOf(&t, n)
	results, passed, w, err := s.runOn(ctx, t, a)
	if ctx.Err() != nil {
		return // the daemon stops: the attempt stays checking, and its restart checks it
	}
	usage := s.attemptUsage(ctx, a)
	t, uerr := s.updateAttempt(ctx, name, n, func(_ *wire.Task, a *wire.Attempt) error {
		a.Usage = usage
		if a.State == wire.AttemptChecking {
			a.State = wire.AttemptDone
		}
		if err != nil {
			a.Error = "the checks could not run: " + err.Error()
			return nil
		}
		a.Error = ""
		a.Head, a.Dirty, a.Diff = w.head, w.dirty, w.diff
		a.CheckRuns++
		if len(t.Checks) > 0 {
			a.Checks, a.Passed = results, &passed
		}
		return nil
	})
	if uerr != nil {
		return
	}
	attrs := map[string]string{"task": name, "attempt": strconv.Itoa(n)}
	switch {
	case err != nil:
		s.emit(ctx, a.Sandbox, EventAttemptFailed, fmt.Sprintf("attempt %d of task %s: the checks could not run: %v", n, name, err), attrs)
	case len(t.Checks) == 0:
	case passed:
		s.emit(ctx, a.Sandbox, EventAttemptPassed, fmt.Sprintf("attempt %d of task %s (%s) passed its checks", n, name, a.Agent), attrs)
	default:
		s.emit(ctx, a.Sandbox, EventAttemptFailed, fmt.Sprintf("attempt %d of task %s (%s) failed its checks: %s", n, name, a.Agent, failing(results)), attrs)
	}
	if err == nil && t.Judge != "" {
		s.judgeAttempt(ctx, name, n)
	}
	s.turnEnded(ctx, name, n)
	s.finishIfDone(ctx, name)
}

// attemptUsage is what an attempt's sandbox spent, but for its judge's sessions: the
// agent's work, and what it ran, as the credential proxy counted it.
func (s *Service) attemptUsage(ctx context.Context, a wire.Attempt) wire.UsageSum {
	sb, err := s.opts.Store.GetSandbox(ctx, a.Sandbox)
	if err != nil {
		return a.Usage
	}
	all, err := s.opts.Store.SumUsage(ctx, sb.ID, "")
	if err != nil {
		return a.Usage
	}
	if judge, err := s.opts.Store.SumUsage(ctx, sb.ID, judgeSession); err == nil && judge.Requests > 0 {
		all.Requests -= judge.Requests
		all.Usage.InputTokens -= judge.Usage.InputTokens
		all.Usage.OutputTokens -= judge.Usage.OutputTokens
		all.Usage.CacheReadTokens -= judge.Usage.CacheReadTokens
		all.Usage.CacheWriteTokens -= judge.Usage.CacheWriteTokens
		all.CostUSD -= judge.CostUSD
		all.Unpriced -= judge.Unpriced
	}
	return all
}

// errSkip is a change to a task that finds nothing to do.
var errSkip = errors.New("nothing to do")

// runOn runs the checks on an attempt's work and reads the work.
func (s *Service) runOn(ctx context.Context, t wire.Task, a wire.Attempt) ([]wire.CheckResult, bool, work, error) {
	c, err := s.opts.Sandboxes.Client(ctx, a.Sandbox)
	if err != nil {
		return nil, false, work{}, err
	}
	results, passed, err := runChecksOn(ctx, c, t.Checks)
	if err != nil {
		return nil, false, work{}, err
	}
	w, err := readWork(ctx, c, t.Base)
	return results, passed, w, err
}

// failing names the checks that failed, with their exit status.
func failing(results []wire.CheckResult) string {
	var out []string
	for _, r := range results {
		if r.Exit != 0 {
			out = append(out, fmt.Sprintf("%s (exit %d)", r.Command, r.Exit))
		}
	}
	return strings.Join(out, ", ")
}

// finishIfDone marks a running task done once every attempt has been checked (or could
// not start), and says so once.
func (s *Service) finishIfDone(ctx context.Context, name string) {
	var last string
	t, err := s.update(ctx, name, func(t *wire.Task) error {
		if t.State != wire.TaskRunning {
			return errSkip
		}
		for _, a := range t.Attempts {
			switch a.State {
			case wire.AttemptDone, wire.AttemptFailed, wire.AttemptLanded:
				if awaitsVerdict(t, &a) {
					return errSkip // its judge's answer ends the task
				}
				if a.State != wire.AttemptFailed {
					last = a.Sandbox
				}
			default:
				return errSkip
			}
		}
		t.State = wire.TaskDone
		return nil
	})
	if err != nil || last == "" {
		return
	}
	passed := 0
	for _, a := range t.Attempts {
		if a.Passed != nil && *a.Passed {
			passed++
		}
	}
	s.emit(ctx, last, EventTaskDone, fmt.Sprintf("task %s: every attempt is done, %d of %d passed its checks", name, passed, len(t.Attempts)),
		map[string]string{"task": name, "passed": strconv.Itoa(passed)})
}
