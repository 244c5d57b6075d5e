package cli

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/client"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
)

// taskPoll is how often --wait asks the daemon how a task or a landing stands.
const taskPoll = time.Second

func newCmdTask(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "One prompt tried by several agents at once, each attempt checked and ranked, the best one landed",
		Long: `A task is a prompt, a repository at a base commit, the agents to try, and the checks that
decide. Each attempt runs in a sandbox of its own, all started from one prepared base; the
checks run in an attempt's sandbox when its agent's turn ends; the attempts are ranked
(checks passed first, then the judge's score, then the smaller diff, the lower cost, the
shorter time); the best lands through a merge queue per repository and branch, or as a pull
request.

  paddock task new . --prompt "make the failing test pass" --agents claude:2,codex --check "go test ./..."
  paddock task show NAME                  the attempts ranked, and why
  paddock task review NAME/2 "keep the old flag working"
  paddock task land NAME                  rebased, checked again, the host branch fast-forwarded
  paddock task rm NAME`,
	}
	cmd.AddCommand(newCmdTaskNew(f), newCmdTaskLs(f), newCmdTaskShow(f), newCmdTaskReview(f),
		newCmdTaskLand(f), newCmdTaskQueue(f), newCmdTaskDrop(f), newCmdTaskRm(f))
	return cmd
}

type taskNewOptions struct {
	repo    string
	prompt  string
	agents  string
	checks  []string
	setup   string
	backend string
	judge   string
	name    string
	base    string
	into    string
	wait    bool
}

func newCmdTaskNew(f *Factory) *cobra.Command {
	opts := &taskNewOptions{}
	cmd := &cobra.Command{
		Use:   "new REPO --prompt TEXT [--agents claude:2,codex,gemini@docker] [--check CMD]...",
		Short: "Start a task: one attempt per agent, each in its own sandbox; prints the task's name",
		Long: `Start a task on the git repository at REPO (a path on this machine, where the daemon runs).
The daemon prepares one base (the repository at --base, --setup run once in it), copies it
into a sandbox per attempt, and gives each attempt's agent the prompt at once. The task's
name goes to standard output; --wait follows it until every attempt is checked.

--agents lists the attempts: KIND[:COUNT][@BACKEND], comma-separated, e.g.
claude:2,codex,gemini@docker is two Claude Code attempts and one Codex on --backend, and one
Gemini CLI attempt on docker. Without --prompt, standard input is the prompt.

--check commands run in /workspace of an attempt's sandbox when its agent's turn ends and
after each new commit; an attempt passes when every one exits 0. --judge names an agent
that reads each diff and scores it (auto: one of another vendor than the attempts').`,
		Args: exactArgs(1, "the repository's path"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.repo = args[0]
			return runTaskNew(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.prompt, "prompt", "", "the `TEXT` every attempt's agent is asked (default: standard input)")
	fl.StringVar(&opts.agents, "agents", "claude", "the attempts as `AGENTS`, KIND[:COUNT][@BACKEND],... (e.g. claude:2,codex,gemini@docker)")
	fl.StringArrayVar(&opts.checks, "check", nil, "a shell `CMD` that must exit 0 in the attempt's /workspace (repeat for more)")
	fl.StringVar(&opts.setup, "setup", "", "a shell `CMD` run once in the prepared base before it is copied (e.g. npm ci)")
	fl.StringVar(&opts.backend, "backend", "", "the attempts' `BACKEND`, unless --agents names one (default: the config's)")
	fl.StringVar(&opts.judge, "judge", "", "the `AGENT` that scores each attempt's diff, or auto for one of another vendor (default: no judge)")
	fl.StringVar(&opts.name, "name", "", "the task's `NAME` (default: one made from the prompt)")
	fl.StringVar(&opts.base, "base", "", "the `COMMIT` the attempts start from (default: the repository's HEAD)")
	fl.StringVar(&opts.into, "into", "", "the `BRANCH` a landing goes into by default (default: the repository's current branch)")
	fl.BoolVar(&opts.wait, "wait", false, "follow the task until every attempt is done, a line per attempt as it ends")
	return cmd
}

// attemptsRE is one entry of --agents: KIND[:COUNT][@BACKEND], or KIND@BACKEND:COUNT.
var attemptsRE = regexp.MustCompile(`^([a-z0-9_-]+)(?::([0-9]+))?(?:@([a-z0-9_-]+))?(?::([0-9]+))?$`)

// parseAttempts reads --agents into one AttemptSpec per attempt, refusing an unknown
// agent or a count below 1.
func parseAttempts(s string) ([]wire.AttemptSpec, error) {
	var out []wire.AttemptSpec
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		m := attemptsRE.FindStringSubmatch(item)
		if m == nil || m[2] != "" && m[4] != "" {
			return nil, usagef("--agents: %q is not KIND[:COUNT][@BACKEND] (e.g. claude:2,codex,gemini@docker)", item)
		}
		if _, err := agents.Get(m[1]); err != nil {
			return nil, usagef("--agents: %v", err)
		}
		count := 1
		if c := m[2] + m[4]; c != "" {
			n, err := strconv.Atoi(c)
			if err != nil || n < 1 {
				return nil, usagef("--agents: %q asks for %s attempts: give a count of 1 or more", item, c)
			}
			count = n
		}
		for range count {
			out = append(out, wire.AttemptSpec{Agent: m[1], Backend: m[3]})
		}
	}
	if len(out) == 0 {
		return nil, usagef("--agents names no agent: give KIND[:COUNT][@BACKEND],... (e.g. claude:2,codex)")
	}
	return out, nil
}

// onThisMachine refuses a remote context: a task's repository is a path on the daemon's
// machine, which this command can only name when the daemon is this machine's.
func (f *Factory) onThisMachine(what string) error {
	p, err := f.Paths()
	if err != nil {
		return err
	}
	// remoteClient names a context that is not there, and connects to nothing.
	if rc, name, err := f.remoteClient(p); err != nil {
		return err
	} else if rc != nil {
		return usagef("%s: the repository must be on the daemon's machine, and context %s's daemon is on another: run it on that server, or here with --context local", what, name)
	}
	return nil
}

func runTaskNew(ctx context.Context, f *Factory, opts *taskNewOptions) error {
	specs, err := parseAttempts(opts.agents)
	if err != nil {
		return err
	}
	if opts.judge != "" && opts.judge != "auto" {
		if _, err := agents.Get(opts.judge); err != nil {
			return usagef("--judge: %v (or auto)", err)
		}
	}
	for _, c := range opts.checks {
		if strings.TrimSpace(c) == "" {
			return usagef("--check is empty: give a shell command, e.g. --check \"go test ./...\"")
		}
	}
	if err := f.onThisMachine("task new"); err != nil {
		return err
	}
	repo, err := repoRoot(ctx, opts.repo)
	if err != nil {
		return err
	}
	if opts.prompt == "" {
		if isTerminal(f.IO.In) {
			return usagef("give a prompt: paddock task new %s --prompt \"what to do\" (or on standard input)", opts.repo)
		}
		data, err := io.ReadAll(f.IO.In)
		if err != nil {
			return err
		}
		opts.prompt = string(data)
	}
	if opts.prompt = strings.TrimSpace(opts.prompt); opts.prompt == "" {
		return usagef("the prompt is empty: say what every attempt's agent should do")
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	t, err := c.CreateTask(ctx, wire.TaskCreateRequest{Name: opts.name, Repo: repo, Base: opts.base, Branch: opts.into,
		Prompt: opts.prompt, Attempts: specs, Checks: opts.checks, Setup: opts.setup, Backend: opts.backend, Judge: opts.judge})
	if err != nil {
		return err
	}
	fmt.Fprintln(f.IO.Out, t.Name)
	if !opts.wait {
		fmt.Fprintf(f.IO.ErrOut, "paddock: task %s started %d attempts; see them with `paddock task show %s`\n", t.Name, len(specs), t.Name)
		return nil
	}
	return waitTask(ctx, f, c, t)
}

// attemptEnded says an attempt's agent ended its turn and its checks ran, or it could
// not start.
func attemptEnded(a wire.Attempt) bool {
	return a.State == wire.AttemptDone || a.State == wire.AttemptFailed || a.State == wire.AttemptLanded
}

// waitTask follows a task until no attempt is at work, printing a line on stderr for
// each attempt as it ends. A task that failed is an error.
func waitTask(ctx context.Context, f *Factory, c *client.Client, t wire.Task) error {
	told, working := map[int]bool{}, map[int]bool{}
	tick := time.NewTicker(taskPoll)
	defer tick.Stop()
	for {
		for _, a := range t.Attempts {
			if a.State == wire.AttemptWorking && !working[a.N] {
				working[a.N] = true
				fmt.Fprintf(f.IO.ErrOut, "paddock: %s/%d (%s) at work in sandbox %s\n", t.Name, a.N, a.Agent, a.Sandbox)
			}
			if attemptEnded(a) && !told[a.N] {
				told[a.N] = true
				fmt.Fprintf(f.IO.ErrOut, "paddock: %s/%d (%s) %s\n", t.Name, a.N, a.Agent, attemptOutcome(t, a))
			}
		}
		switch t.State {
		case wire.TaskFailed:
			return fmt.Errorf("task %s failed: %s (`paddock task show %s` says more)", t.Name, t.Error, t.Name)
		case wire.TaskDone, wire.TaskLanding, wire.TaskLanded:
			if len(told) == len(t.Attempts) {
				fmt.Fprintf(f.IO.ErrOut, "paddock: every attempt of %s is done: %s\n", t.Name, nextTaskStep(t))
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		var err error
		if t, err = c.Task(ctx, t.Name); err != nil {
			return err
		}
	}
}

// attemptOutcome says how an ended attempt came out, as a line reads it.
func attemptOutcome(t wire.Task, a wire.Attempt) string {
	switch {
	case a.State == wire.AttemptFailed:
		return "failed: " + a.Error
	case len(t.Checks) == 0:
		return "done (no checks)"
	case a.Passed == nil:
		return "done, its checks not run"
	case *a.Passed:
		return "passed its checks"
	}
	return "failed its checks: " + failedChecks(a)
}

// failedChecks names the checks of an attempt that exited non-zero, with their status.
func failedChecks(a wire.Attempt) string {
	var out []string
	for _, ch := range a.Checks {
		if ch.Exit != 0 {
			out = append(out, fmt.Sprintf("%s (exit %d)", ch.Command, ch.Exit))
		}
	}
	return strings.Join(out, ", ")
}

// nextTaskStep is the command a user runs next on a task, as it stands.
func nextTaskStep(t wire.Task) string {
	best := t.Best()
	switch {
	case t.State == wire.TaskPreparing || t.State == wire.TaskRunning:
		return fmt.Sprintf("attempts are at work: look again with `paddock task show %s`", t.Name)
	case t.State == wire.TaskLanding:
		return fmt.Sprintf("an attempt is in the merge queue: `paddock task queue %s`", t.Name)
	case t.State == wire.TaskLanded:
		return fmt.Sprintf("landed: remove its sandboxes with `paddock task rm %s`", t.Name)
	case t.State == wire.TaskFailed:
		return fmt.Sprintf("start it again with `paddock task new`, or remove it with `paddock task rm %s`", t.Name)
	case best == nil:
		return fmt.Sprintf("no attempt to land: `paddock task rm %s`", t.Name)
	case best.Passed != nil && *best.Passed || len(t.Checks) == 0 && best.State == wire.AttemptDone:
		return fmt.Sprintf("land the best: `paddock task land %s`", t.Name)
	}
	return fmt.Sprintf("no attempt passed its checks: comment with `paddock task review %s/%d MESSAGE`; an attempt lands once its checks pass",
		t.Name, best.N)
}

// taskRef reads NAME/N, an attempt of a task.
func taskRef(s string) (string, int, error) {
	name, n, ok := strings.Cut(s, "/")
	if !ok || name == "" {
		return "", 0, usagef("name the attempt as TASK/N, e.g. %s/1 (`paddock task show %s` numbers them)", s, s)
	}
	i, err := strconv.Atoi(n)
	if err != nil || i < 1 {
		return "", 0, usagef("%q: an attempt's number is 1 or more (`paddock task show %s` numbers them)", s, name)
	}
	return name, i, nil
}

// exitOfEntry is the error a landing's end is for the exit code: none for landed or a
// pull request, a conflict for a conflict (exit 4), a failure otherwise.
func exitOfEntry(e wire.QueueEntry) error {
	switch e.State {
	case wire.QueueLanded, wire.QueuePR:
		return nil
	case wire.QueueConflict:
		if e.Task == "" {
			return apperr.Conflict("`paddock task queue` follows it",
				"%s conflicts with %s: %s%s", entryWho(e), e.Into, strings.Join(e.Conflicts, ", "), detailTail(e.Detail))
		}
		return apperr.Conflict(fmt.Sprintf("the attempt's agent was told; `paddock task queue %s` follows it, `paddock task drop %d` gives up", e.Task, e.ID),
			"%s conflicts with %s: %s", entryWho(e), e.Into, strings.Join(e.Conflicts, ", "))
	case wire.QueueDropped:
		return apperr.Conflict("", "entry %d of %s was dropped", e.ID, entryWho(e))
	}
	return fmt.Errorf("%s did not land on %s: %s", entryWho(e), e.Into, e.Detail)
}
