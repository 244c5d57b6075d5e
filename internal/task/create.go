package task

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/agents"
	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsrc"
	"github.com/paddockhq/paddock/internal/store"
)

// MaxAttempts is the most attempts one task may have.
const MaxAttempts = 8

// maxNameLen is the longest task name: its attempts' sandboxes are named NAME-N and its
// prepared base NAME-base, and a sandbox name is at most 63 characters.
const maxNameLen = 56

// Create records a task and starts preparing it; progress, when set, is told each step
// of what Create itself waits for. It returns once the task is recorded: the prepared
// base, the attempts' sandboxes and their agents are made by the daemon, and the task's
// state says how far that went. A request refused changes nothing.
func (s *Service) Create(ctx context.Context, req wire.TaskCreateRequest, progress func(string)) (wire.Task, error) {
	if progress == nil {
		progress = func(string) {}
	}
	// One creation at a time: two that made the same name from their prompts would
	// otherwise both find it free.
	s.createMu.Lock()
	defer s.createMu.Unlock()
	t, err := s.newTask(ctx, req)
	if err != nil {
		return wire.Task{}, err
	}
	if err := s.opts.Store.AddTask(ctx, t); err != nil {
		return wire.Task{}, apperr.Conflict("choose another name with --name", "%v", err)
	}
	progress(fmt.Sprintf("task %s: %d attempts on %s at %s", t.Name, len(t.Attempts), t.Repo, short(t.Base)))
	s.work.Go(func() { s.prepare(s.base, t.Name) })
	return t, nil
}

// newTask checks a request and returns the task it makes, with nothing recorded.
func (s *Service) newTask(ctx context.Context, req wire.TaskCreateRequest) (wire.Task, error) {
	prompt := strings.TrimSpace(req.Prompt)
	if prompt == "" {
		return wire.Task{}, apperr.Invalid("say what the agents should do with --prompt TEXT", "a task needs a prompt")
	}
	switch n := len(req.Attempts); {
	case n == 0:
		return wire.Task{}, apperr.Invalid("name the agents with --agents, e.g. --agents claude:2,codex", "a task needs at least one attempt")
	case n > MaxAttempts:
		return wire.Task{}, apperr.Invalid(fmt.Sprintf("ask for at most %d", MaxAttempts), "%d attempts are too many for one task", n)
	}
	for i, c := range req.Checks {
		if strings.TrimSpace(c) == "" {
			return wire.Task{}, apperr.Invalid("give each --check a command, e.g. --check 'go test ./...'", "check %d is empty", i+1)
		}
	}
	if err := ValidJudge(req.Judge); err != nil {
		return wire.Task{}, err
	}
	attempts := make([]wire.Attempt, len(req.Attempts))
	for i, spec := range req.Attempts {
		a, err := agents.Get(spec.Agent)
		if err != nil {
			return wire.Task{}, apperr.Invalid("run `paddock doctor` to see the agents", "attempt %d: %v", i+1, err)
		}
		// The checks run when the agent's turn ends: an agent whose hooks do not say so
		// would be checked only once it exits, which it does not do at its prompt. A
		// shell attempt's command ends its turn by exiting.
		if !a.Status.Idle && a.Name != "shell" {
			return wire.Task{}, apperr.Invalid("try it with agents whose turns paddock sees end: "+strings.Join(turnAgents(), ", "),
				"attempt %d: paddock cannot tell when %s ends its turn (%s), so its work would never be checked", i+1, a.Name, a.Status.Source)
		}
		be := spec.Backend
		if be == "" {
			be = req.Backend
		}
		b, err := s.opts.Sandboxes.PickBackend(ctx, be)
		if err != nil {
			return wire.Task{}, fmt.Errorf("attempt %d (%s): %w", i+1, a.Name, err)
		}
		attempts[i] = wire.Attempt{N: i + 1, Agent: a.Name, Backend: b.Name(), Session: a.Name, State: wire.AttemptStarting}
	}
	repo, base, branch, err := resolveRepo(ctx, req)
	if err != nil {
		return wire.Task{}, err
	}
	name, err := s.taskName(ctx, req.Name, prompt, len(attempts))
	if err != nil {
		return wire.Task{}, err
	}
	for i := range attempts {
		attempts[i].Sandbox = attemptSandbox(name, attempts[i].N)
		attempts[i].Branch = AttemptBranch(name, attempts[i].N)
	}
	now := s.opts.Now()
	return wire.Task{Name: name, Repo: repo, Base: base, Branch: branch, Prompt: prompt, Checks: req.Checks,
		Setup: strings.TrimSpace(req.Setup), Backend: req.Backend, Judge: req.Judge, State: wire.TaskPreparing,
		Attempts: attempts, Created: now, Updated: now}, nil
}

// turnAgents are the agents a task can try: those whose turns' ends paddock sees, and
// shell.
func turnAgents() []string {
	var out []string
	for _, name := range agents.Names() {
		if a, err := agents.Get(name); err == nil && (a.Status.Idle || a.Name == "shell") {
			out = append(out, name)
		}
	}
	return out
}

// AttemptBranch is the branch an attempt works on in its sandbox: task/NAME/N.
func AttemptBranch(task string, n int) string { return "task/" + task + "/" + strconv.Itoa(n) }

// attemptSandbox is the name of an attempt's sandbox.
func attemptSandbox(task string, n int) string { return task + "-" + strconv.Itoa(n) }

// baseSandbox is the name of a task's prepared base, while it exists.
func baseSandbox(task string) string { return task + "-base" }

// resolveRepo checks the request's repository and resolves its base commit (to a full
// id) and its branch, with the host's hardened git.
func resolveRepo(ctx context.Context, req wire.TaskCreateRequest) (repo, base, branch string, err error) {
	repo = req.Repo
	if repo == "" || !filepath.IsAbs(repo) {
		return "", "", "", apperr.Invalid("give the repository as an absolute path on the daemon's machine", "the repository %q is not an absolute path", repo)
	}
	repo = filepath.Clean(repo)
	if fi, err := os.Stat(repo); err != nil || !fi.IsDir() {
		return "", "", "", apperr.Invalid("give the path of a git repository's work tree", "%s is not a directory", repo)
	}
	if top, err := gitsrc.Git(ctx, repo, "rev-parse", "--show-toplevel"); err != nil {
		return "", "", "", apperr.Invalid("give the path of a git repository's work tree (git init, git commit)", "%s is not a git repository", repo)
	} else if !samePath(top, repo) {
		return "", "", "", apperr.Invalid("give the repository's top directory, "+top, "%s is inside the repository %s, not its top", repo, top)
	}
	src, err := gitsrc.Describe(ctx, repo)
	if err != nil {
		return "", "", "", err
	}
	base = src.Commit
	if req.Base != "" {
		if strings.HasPrefix(req.Base, "-") {
			return "", "", "", apperr.Invalid("give a commit, a branch or a tag", "%q is not a commit", req.Base)
		}
		if base, err = gitsrc.Git(ctx, repo, "rev-parse", "--verify", "-q", "--end-of-options", req.Base+"^{commit}"); err != nil {
			return "", "", "", apperr.Invalid("give a commit of "+repo+" (git log shows them)", "no commit %q in %s", req.Base, repo)
		}
		// The attempts' sandboxes are seeded from a bundle of HEAD, the branches and
		// the tags: the base must be among what those reach.
		if out, err := gitsrc.Git(ctx, repo, "rev-list", "-n", "1", base, "--not", "HEAD", "--branches", "--tags"); err != nil || out != "" {
			return "", "", "", apperr.Invalid("give a commit on one of the repository's branches or tags", "the commit %s is on none of the branches or tags of %s", req.Base, repo)
		}
	}
	branch = req.Branch
	if branch == "" {
		branch = src.Branch
	} else if _, err := gitsrc.Git(ctx, repo, "check-ref-format", "--branch", branch); err != nil || strings.HasPrefix(branch, "-") {
		return "", "", "", apperr.Invalid("give a branch name", "%q is not a branch name", branch)
	}
	return repo, base, branch, nil
}

// samePath says whether two paths name one directory, through any symlinks.
func samePath(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// taskName checks a given name, or makes one from the prompt's first words, unused by
// any task and by the sandboxes its attempts will have.
func (s *Service) taskName(ctx context.Context, given, prompt string, attempts int) (string, error) {
	if given != "" {
		if err := wire.ValidateName(given); err != nil {
			return "", err
		}
		if len(given) > maxNameLen {
			return "", apperr.Invalid("choose a shorter name with --name", "the task name %q is longer than %d characters", given, maxNameLen)
		}
		if taken := s.nameTaken(ctx, given, attempts); taken != "" {
			return "", apperr.Conflict("choose another name with --name", "the name %q is taken: %s", given, taken)
		}
		return given, nil
	}
	stem := nameFromPrompt(prompt)
	for i := 1; ; i++ {
		name := stem
		if i > 1 {
			name = fmt.Sprintf("%s-%d", stem, i)
		}
		if s.nameTaken(ctx, name, attempts) == "" {
			return name, nil
		}
		if i > 1000 {
			return "", apperr.Conflict("choose a name with --name", "no free name from %q", stem)
		}
	}
}

// nameTaken says what holds a name already (a task, or a sandbox one of its attempts
// would have), or "".
func (s *Service) nameTaken(ctx context.Context, name string, attempts int) string {
	if _, err := s.opts.Store.GetTask(ctx, name); !errors.Is(err, store.ErrNoTask) {
		return "a task has it"
	}
	names := []string{baseSandbox(name)}
	for n := 1; n <= attempts; n++ {
		names = append(names, attemptSandbox(name, n))
	}
	for _, sb := range names {
		if _, err := s.opts.Store.GetSandbox(ctx, sb); err == nil {
			return "a sandbox named " + sb + " exists"
		}
	}
	return ""
}

// nameFromPrompt makes a name of a prompt's first words: "Fix the login bug, then..."
// gives fix-the-login-bug-then.
func nameFromPrompt(prompt string) string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(prompt), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	}) {
		if len(words) == 5 || len(strings.Join(append(words, w), "-")) > 40 {
			break
		}
		words = append(words, w)
	}
	name := strings.Join(words, "-")
	if name == "" || wire.ValidateName(name) != nil {
		return "task"
	}
	return name
}

// short is a commit's first 12 characters.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
