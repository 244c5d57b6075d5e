package task

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/tailbuf"
	"github.com/paddockhq/paddock/internal/termtext"
)

// The git steps of a landing. The host never runs git in a repository the sandbox can
// write, nor a hook or a filter of the sandbox's: the attempt's branch is rebased inside
// its own sandbox, onto the host branch's tip brought there in a bundle; the host then
// fetches the result (gitsync, hardened) and moves its branch to it, a fast-forward,
// with hooks and filters off.

// OntoRef is where the host branch's tip is put in an attempt's sandbox for its rebase:
// the agent told of a conflict rebases onto paddock/onto.
const OntoRef = "refs/paddock/onto"

// ontoBundle is the bundle of the host branch's new commits, in the sandbox's git
// directory while the rebase takes it in.
const ontoBundle = "paddock-onto.bundle"

// rebasingMark is a file in the sandbox's git directory while the queue's rebase runs
// there: a rebase found under way with it is the queue's own, cut short, and is undone;
// one without it is the agent's.
const rebasingMark = "paddock-rebasing"

// uncommittedMessage is the commit message of the attempt's uncommitted work, committed
// on its branch before it is landed so that nothing the checks saw is left out.
const uncommittedMessage = "The attempt's uncommitted work"

// rebaseScript runs in the attempt's /workspace: $1 is its branch, $2 the commit to
// rebase onto ("" only commits the uncommitted work), or with $3 "bundle", "-": then
// its input is a line "onto ID", the commit, and a bundle of the commits up to it under
// the ref $4 (kept in the git directory's paddock-onto.bundle while it is taken in),
// made on the host while the script gets the branch ready. It prints
// "head ID", HEAD's commit as it leaves it: with the branch ready (exit 0), after
// "conflict PATH" lines when the rebase conflicted and was aborted (exit 10), or after
// what stopped it (exit 20 and up). Hooks are off
// (gitsync.SandboxGitEnv): the agent's own could refuse the commit or the rebase.
const rebaseScript = `set -u
gd=$(git rev-parse --absolute-git-dir) || exit 20
mark="$gd/` + rebasingMark + `"
if [ -e "$mark" ]; then
  # A rebase of ours cut short (the daemon went, and the guest ended what it ran).
  if [ -d "$gd/rebase-merge" ] || [ -d "$gd/rebase-apply" ]; then git rebase --abort >&2 || true; fi
  rm -f "$mark"
fi
for f in rebase-merge rebase-apply MERGE_HEAD CHERRY_PICK_HEAD REVERT_HEAD; do
  if [ -e "$gd/$f" ]; then echo "busy $f"; echo "head $(git rev-parse HEAD)"; exit 21; fi
done
cur=$(git symbolic-ref -q --short HEAD || true)
if [ "$cur" != "$1" ]; then echo "on $cur"; echo "head $(git rev-parse HEAD)"; exit 22; fi
if ! git config user.email >/dev/null; then
  export GIT_AUTHOR_NAME=paddock GIT_AUTHOR_EMAIL=paddock@localhost GIT_COMMITTER_NAME=paddock GIT_COMMITTER_EMAIL=paddock@localhost
fi
if [ -n "$(git status --porcelain)" ]; then
  git add -A >&2 && git commit -q --no-verify -m "` + uncommittedMessage + `" >&2 || exit 23
fi
if [ -z "$2" ]; then echo "head $(git rev-parse HEAD)"; exit 0; fi
if [ "${3:-}" = bundle ]; then
  trap 'rm -f "$gd/` + ontoBundle + `"' EXIT
  IFS= read -r onto || exit 24
  set -- "$1" "${onto#onto }" "$3" "$4"
  cat > "$gd/` + ontoBundle + `" || exit 24
  git fetch -q --no-write-fetch-head "$gd/` + ontoBundle + `" "+$4:` + OntoRef + `" >&2 || exit 24
else
  git update-ref ` + OntoRef + ` "$2" >&2 || exit 24
fi
[ "$(git rev-parse ` + OntoRef + `)" = "$2" ] || exit 24
if ! git merge-base --is-ancestor ` + OntoRef + ` HEAD; then
  : > "$mark"
  if ! GIT_EDITOR=true git -c rebase.autoStash=false -c rebase.updateRefs=false rebase -q ` + OntoRef + ` >&2; then
    git diff --name-only --diff-filter=U | sed 's/^/conflict /'
    git rebase --abort >&2
    rm -f "$mark"
    echo "head $(git rev-parse HEAD)"
    exit 10
  fi
  rm -f "$mark"
fi
echo "head $(git rev-parse HEAD)"
`

// rebased is what the rebase in the sandbox did.
type rebased struct {
	// Onto is the host branch's commit the work was rebased onto; Head the sandbox's
	// HEAD after the rebase (as it was before, when the rebase conflicted or could not
	// start).
	Onto, Head string
	// Conflicts are the files the rebase conflicted on (it was aborted).
	Conflicts []string
}

// errSandboxBusy is an attempt's sandbox that cannot be rebased as it is (mid-rebase or
// merge, or on another branch): the agent is told, as for a conflict.
type errSandboxBusy struct{ what string }

func (e *errSandboxBusy) Error() string { return e.what }

// guestStream runs commands in a sandbox's /workspace through its guest connection.
func guestStream(c *guestclient.Client) gitsync.Stream {
	return func(ctx context.Context, argv, env []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
		return c.Exec(ctx, guestclient.ExecOptions{Argv: argv, Env: env, Dir: inside.Workspace, Stdin: stdin, Stdout: stdout, Stderr: stderr})
	}
}

// subject is what a queue entry lands: a task's attempt, or a plain sandbox's branch
// (paddock merge --queue). A plain sandbox's is seen as a task of one attempt made from
// its entry and held by no store (t.Name empty), so that the steps of a landing (the
// rebase in the sandbox, the checks, the fetch, the fast-forward) are written once.
type subject struct {
	t *wire.Task
	a *wire.Attempt
}

// plain says the subject is a plain sandbox's branch, not a task's attempt.
func (x subject) plain() bool { return x.t.Name == "" }

// String names the subject in a message: "attempt 2 of task fix" or "sandbox web's
// branch main".
func (x subject) String() string {
	if x.plain() {
		return fmt.Sprintf("sandbox %s's branch %s", x.a.Sandbox, termtext.Escape(x.a.Branch))
	}
	return fmt.Sprintf("attempt %d of task %s", x.a.N, x.t.Name)
}

// subjectOf is what an entry lands, as it is now.
func (s *Service) subjectOf(ctx context.Context, e *wire.QueueEntry) (subject, error) {
	if e.Task == "" {
		t := &wire.Task{Repo: e.Repo, Base: e.Base, Checks: e.Checks}
		a := &wire.Attempt{Sandbox: e.Sandbox, Branch: e.Branch, Session: e.Session, State: wire.AttemptDone}
		return subject{t, a}, nil
	}
	t, err := s.Get(ctx, e.Task)
	if err != nil {
		return subject{}, err
	}
	a := attemptOf(&t, e.Attempt)
	if a == nil {
		return subject{}, fmt.Errorf("task %s has no attempt %d", e.Task, e.Attempt)
	}
	return subject{&t, a}, nil
}

// hostGit is hardened git in a task's host repository.
func hostGit(t *wire.Task) *gitsync.Git { return &gitsync.Git{Repo: t.Repo} }

// fetchWork brings the attempt's branches (and its uncommitted work, as WIP refs) into
// the host repository under gitsync.Namespace(sandbox), and returns those refs.
func fetchWork(ctx context.Context, g *gitsync.Git, c *guestclient.Client, t *wire.Task, a *wire.Attempt) (map[string]string, error) {
	if _, err := g.Fetch(ctx, a.Sandbox, t.Base, inside.Workspace, guestStream(c)); err != nil {
		return nil, fmt.Errorf("fetch the work of %s into %s: %w", subject{t, a}, t.Repo, err)
	}
	return g.Refs(ctx, gitsync.Namespace(a.Sandbox))
}

// branchTip is the commit of a host branch, or "" when there is no such branch.
func branchTip(ctx context.Context, g *gitsync.Git, branch string) string {
	out, err := g.Run(ctx, "rev-parse", "--verify", "-q", "--end-of-options", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// validBranch says whether git takes name as a branch's name.
func validBranch(ctx context.Context, g *gitsync.Git, name string) bool {
	if name == "" || strings.HasPrefix(name, "-") {
		return false
	}
	_, err := g.Run(ctx, "check-ref-format", "refs/heads/"+name)
	return err == nil
}

// hostCode lists the files changed from from to to that run code on the host once
// landed (gitsync.RunsOnHost, as paddock merge warns of them).
func hostCode(ctx context.Context, g *gitsync.Git, ref, from, to string) ([]gitsync.HostCode, error) {
	if from == to {
		return nil, nil
	}
	out, err := g.Run(ctx, "diff", "--no-ext-diff", "--no-textconv", "--name-status", "--end-of-options", from, to)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			files = append(files, l)
		}
	}
	return g.RunsOnHost(ctx, gitsync.Result{Updates: []gitsync.Update{{Ref: ref, Old: from, New: to, Files: files}}}, from), nil
}

// hostCodeList says the files of hostCode, one phrase each, for a message.
func hostCodeList(hc []gitsync.HostCode) string {
	parts := make([]string, len(hc))
	for i, h := range hc {
		parts[i] = termtext.Escape(h.Path) + " (" + h.Why + ")"
	}
	return strings.Join(parts, ", ")
}

// rebaseInSandbox rebases the attempt's branch, in its own sandbox, onto the host
// branch's tip (into), after committing the attempt's uncommitted work there. With into
// empty it only commits that work.
func rebaseInSandbox(ctx context.Context, g *gitsync.Git, c *guestclient.Client, t *wire.Task, a *wire.Attempt, into string) (rebased, error) {
	var r rebased
	args := []string{"sh", "-c", rebaseScript, "sh", a.Branch, "", "", ""}
	var input *ontoInput
	if into != "" {
		tip := branchTip(ctx, g, into)
		if tip == "" {
			return r, fmt.Errorf("the host repository %s has no branch %s", t.Repo, into)
		}
		r.Onto, args[5] = tip, tip
		if tip != t.Base && !isAncestor(ctx, g, tip, t.Base) { // else the sandbox has it: it started from the base
			input = bundleOnto(ctx, g, t.Base, "refs/heads/"+into)
			defer input.close()
			args[5], args[6], args[7] = "-", "bundle", "refs/heads/"+into
		}
	}
	var stdout bytes.Buffer
	stderr := &tailbuf.Buffer{Max: 4096}
	opts := guestclient.ExecOptions{Argv: args, Env: gitsync.SandboxGitEnv, Dir: inside.Workspace, Stdout: &stdout, Stderr: stderr}
	if input != nil {
		opts.Stdin = input.r
	}
	code, err := c.Exec(ctx, opts)
	if input != nil {
		onto, berr := input.close()
		if code == 24 && berr != nil {
			return r, fmt.Errorf("bundle %s for the rebase: %w", into, berr)
		}
		if onto != "" {
			r.Onto = onto
		}
	}
	if err != nil {
		return r, fmt.Errorf("rebase in sandbox %s: %w", a.Sandbox, err)
	}
	out := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	first := out[0]
	for _, l := range out {
		if f, ok := strings.CutPrefix(l, "conflict "); ok {
			r.Conflicts = append(r.Conflicts, f)
		} else if h, ok := strings.CutPrefix(l, "head "); ok {
			r.Head = h
		}
	}
	switch code {
	case 0:
		if r.Head == "" {
			return r, fmt.Errorf("rebase in sandbox %s: it said %q", a.Sandbox, termtext.Escape(first))
		}
		return r, nil
	case 10:
		if len(r.Conflicts) == 0 {
			return r, fmt.Errorf("the rebase of %s onto %s failed: %s", a.Branch, into, termtext.Escape(strings.TrimSpace(stderr.String())))
		}
		return r, nil
	case 21:
		return r, &errSandboxBusy{fmt.Sprintf("the /workspace of sandbox %s is in the middle of a %s", a.Sandbox, busyWhat(strings.TrimPrefix(first, "busy ")))}
	case 22:
		return r, &errSandboxBusy{fmt.Sprintf("the /workspace of sandbox %s has %q checked out, not the branch %s", a.Sandbox, termtext.Escape(strings.TrimPrefix(first, "on ")), a.Branch)}
	case 23:
		return r, fmt.Errorf("commit the uncommitted work in sandbox %s: %s", a.Sandbox, termtext.Escape(strings.TrimSpace(stderr.String())))
	}
	return r, fmt.Errorf("rebase in sandbox %s: exit %d: %s", a.Sandbox, code, termtext.Escape(strings.TrimSpace(stderr.String())))
}

// busyWhat names the operation a git directory's file says is under way.
func busyWhat(file string) string {
	switch file {
	case "rebase-merge", "rebase-apply":
		return "rebase"
	case "MERGE_HEAD":
		return "merge"
	case "CHERRY_PICK_HEAD":
		return "cherry-pick"
	case "REVERT_HEAD":
		return "revert"
	}
	return "git operation"
}

// ontoInput is the rebase script's input in a bundle's mode: "onto ID" and the bundle,
// as git makes it on the host.
type ontoInput struct {
	r    *io.PipeReader
	done chan struct{}
	onto string // the bundle's head, once its header was read
	err  error
}

// bundleOnto starts bundling the commits from base to ref, the input of a rebase.
func bundleOnto(ctx context.Context, g *gitsync.Git, base, ref string) *ontoInput {
	pr, pw := io.Pipe()
	in := &ontoInput{r: pr, done: make(chan struct{})}
	go func() {
		defer close(in.done)
		w := &ontoPrefix{w: pw, ref: ref, in: in}
		err := g.RunTo(ctx, w, "bundle", "create", "-q", "-", ref, "^"+base)
		if err == nil && in.onto == "" {
			err = fmt.Errorf("it does not hold %s", ref)
		}
		in.err = err
		pw.CloseWithError(err)
	}()
	return in
}

// close ends the bundling (if the script did not take it all) and says the commit it
// holds.
func (in *ontoInput) close() (string, error) {
	in.r.CloseWithError(io.ErrClosedPipe)
	<-in.done
	return in.onto, in.err
}

// ontoPrefix passes a bundle on once its header is read, after a line "onto ID" saying
// the commit it holds under ref.
type ontoPrefix struct {
	w      io.Writer
	ref    string
	in     *ontoInput
	header []byte
	passed bool
}

func (p *ontoPrefix) Write(b []byte) (int, error) {
	if p.passed {
		return p.w.Write(b)
	}
	p.header = append(p.header, b...)
	end := bytes.Index(p.header, []byte("\n\n"))
	if end < 0 {
		if len(p.header) > 1<<20 {
			return 0, errors.New("a bundle header over 1 MB")
		}
		return len(b), nil
	}
	for _, l := range strings.Split(string(p.header[:end]), "\n")[1:] {
		if id, name, ok := strings.Cut(l, " "); ok && name == p.ref && !strings.HasPrefix(id, "-") {
			p.in.onto = id
		}
	}
	if p.in.onto == "" {
		return 0, fmt.Errorf("it does not hold %s", p.ref)
	}
	p.passed = true
	if _, err := fmt.Fprintf(p.w, "onto %s\n", p.in.onto); err != nil {
		return 0, err
	}
	if _, err := p.w.Write(p.header); err != nil {
		return 0, err
	}
	return len(b), nil
}

// landedSince lists the commits on the host branch since the task's base that touched
// the files, "abbrev subject", newest first.
func landedSince(ctx context.Context, g *gitsync.Git, base, onto string, files []string) []string {
	if base == onto || len(files) == 0 {
		return nil
	}
	args := append([]string{"--literal-pathspecs", "log", "--no-show-signature", "--format=%h %s", "--end-of-options", base + ".." + onto, "--"}, files...)
	out, err := g.Run(ctx, args...)
	if err != nil {
		return nil
	}
	var commits []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			commits = append(commits, termtext.Escape(l))
		}
	}
	return commits
}

// errMoved is the host branch moved since the work was rebased onto it: rebase again.
var errMoved = errors.New("the host branch moved")

// hostDirtyError is the host's work tree, with the branch checked out, holding
// uncommitted changes to tracked files: its branch is not moved under them.
type hostDirtyError struct{ dir, files string }

func (e *hostDirtyError) Error() string {
	return fmt.Sprintf("the host's work tree %s has uncommitted changes to tracked files (%s): commit or stash them, then land again", e.dir, e.files)
}

// moveBranch fast-forwards the host branch into from onto to commit: in the work tree
// that has it checked out, a fast-forward merge with hooks and filters off (its tracked
// files must be clean); elsewhere a compare-and-swap of the ref. errMoved says the branch
// is no longer at onto.
func moveBranch(ctx context.Context, g *gitsync.Git, into, onto, commit string) error {
	ctx = context.WithoutCancel(ctx) // once begun, it ends: never a branch half moved
	dir, err := checkedOutIn(ctx, g, into)
	if err != nil {
		return err
	}
	if dir == "" {
		if _, err := g.Run(ctx, "update-ref", "-m", "paddock: land", "refs/heads/"+into, commit, onto); err != nil {
			if branchTip(ctx, g, into) != onto {
				return errMoved
			}
			return err
		}
		return nil
	}
	wt := &gitsync.Git{Repo: dir}
	st, err := wt.Run(ctx, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules=none")
	if err != nil {
		return err
	}
	if dirty := strings.TrimSpace(st); dirty != "" {
		files := strings.Split(dirty, "\n")
		if len(files) > 5 {
			files = append(files[:5], "...")
		}
		return &hostDirtyError{dir: dir, files: termtext.Escape(strings.Join(files, "; "))}
	}
	if head, _ := wt.Run(ctx, "rev-parse", "--verify", "-q", "HEAD"); strings.TrimSpace(head) != onto {
		return errMoved
	}
	args := append(gitsync.NoFilters(ctx, dir), "-c", "merge.autoStash=false", "-c", "merge.verifySignatures=false",
		"merge", "--ff-only", "--no-overwrite-ignore", "--no-stat", "--end-of-options", commit)
	if _, err := wt.Run(ctx, args...); err != nil {
		if head, _ := wt.Run(ctx, "rev-parse", "--verify", "-q", "HEAD"); strings.TrimSpace(head) != onto {
			return errMoved
		}
		return fmt.Errorf("fast-forward %s in %s: %w", into, dir, err)
	}
	return nil
}

// checkedOutIn is the work tree of the host repository (its main one or a linked one)
// that has the branch checked out, or "".
func checkedOutIn(ctx context.Context, g *gitsync.Git, branch string) (string, error) {
	out, err := g.Run(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return "", err
	}
	dir := ""
	for _, l := range strings.Split(out, "\n") {
		if d, ok := strings.CutPrefix(l, "worktree "); ok {
			dir = d
		} else if b, ok := strings.CutPrefix(l, "branch "); ok && b == "refs/heads/"+branch {
			return dir, nil
		}
	}
	return "", nil
}

// isAncestor says whether a is an ancestor of b in the host repository.
func isAncestor(ctx context.Context, g *gitsync.Git, a, b string) bool {
	_, err := g.Run(ctx, "merge-base", "--is-ancestor", a, b)
	return err == nil
}
