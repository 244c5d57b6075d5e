package gitsync

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/termtext"
)

// The merge of a sandbox's work into the host repository's current branch, after a sync
// brought it into refs/paddock/SANDBOX/*: `paddock merge`, and the web UI's Merge through
// the daemon, which both plan it here (what would be merged, what runs code on the host
// once it is, what refuses it) and then run it.
//
// A merge is the user's own operation in the user's own repository, but what it brings
// in is the sandbox's, so host git runs it as it runs a sync (safeConfig): no hooks (a
// hooks path inside the work tree, .husky or .githooks, would run the agent's post-merge
// hook as the merge ends; the user's own hooks in .git/hooks do not run either, so run
// your checks after), no fsmonitor, no external diff. git reads the merge's attributes
// from the host's working tree, but the checkout that ends it applies the incoming
// .gitattributes: a filter (or merge or diff driver) named there runs if the host's config
// defines one of that name. The plan refuses such a merge outright (FilterRefusal), with
// or without confirmation: review the file and merge by hand.

// MergeRequest is what to merge.
type MergeRequest struct {
	// Sandbox names the sandbox; Base is the commit it started from.
	Sandbox, Base string
	// Branch is the sandbox's branch to merge; empty, Current.
	Branch string
	// Current is the branch the sandbox's /workspace has checked out ("" when detached).
	Current string
	// WIP merges the branch's uncommitted work too (its WIP commit on top of it).
	WIP bool
	// Expect, when set, is the commit the user was shown: a branch that has moved since
	// is refused (exit 4), so that what is merged is what was shown, warnings included.
	Expect string
}

// MergePlan is what a merge would do, worked out before anything changes.
type MergePlan struct {
	Sandbox string `json:"sandbox"`
	// Branch is the sandbox's branch, Ref what is merged (the branch's ref, or its WIP
	// ref), Commit the commit Ref points at.
	Branch string `json:"branch"`
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	// Into is the host's current branch; Head its commit before the merge.
	Into string `json:"into"`
	Head string `json:"head"`
	// Commits are the commits that would come in ("abbrev subject"), newest first.
	Commits []string `json:"commits"`
	// Files are the files they change ("STATUS\tPATH"), from where the two meet.
	Files []string `json:"files"`
	// FastForward says the host's branch only moves to Commit.
	FastForward bool `json:"fast_forward"`
	// RunsOnHost are the files that run code on the host once merged: the merge needs
	// the user's yes when there are any.
	RunsOnHost []HostCode `json:"runs_on_host"`
	// Uncommitted says the branch has uncommitted work in the sandbox that is not
	// merged (merge with WIP to include it), WIPRef its ref.
	Uncommitted bool   `json:"uncommitted,omitempty"`
	WIPRef      string `json:"wip_ref,omitempty"`
}

// UpToDate says there is nothing to merge.
func (p MergePlan) UpToDate() bool { return len(p.Commits) == 0 }

// MergeResult is what a merge did.
type MergeResult struct {
	MergePlan
	// New is the host branch's commit after the merge (Commit for a fast-forward, else a
	// merge commit).
	New string `json:"new"`
}

// CurrentBranch asks the sandbox which branch /workspace has checked out ("" when its
// HEAD is detached).
func CurrentBranch(ctx context.Context, stream Stream) (string, error) {
	var out, errOut bytes.Buffer
	code, err := stream(ctx, []string{"git", "symbolic-ref", "-q", "--short", "HEAD"}, SandboxGitEnv, nil, &out, &errOut)
	if err != nil {
		return "", err
	}
	b := strings.TrimSpace(out.String())
	if code != 0 || !refName("refs/heads/"+b) {
		return "", nil
	}
	return b, nil
}

// PlanMerge works out a merge of the sandbox's fetched work into the host's current
// branch, refusing (apperr, exit 2) a host that is mid-merge or rebase, on no branch or
// with uncommitted changes, a branch the sandbox does not have, and incoming attributes
// that would run a driver the host defines.
func (g *Git) PlanMerge(ctx context.Context, req MergeRequest) (MergePlan, error) {
	p := MergePlan{Sandbox: req.Sandbox}
	if err := g.hostReady(ctx); err != nil {
		return p, err
	}
	head, err := g.Run(ctx, "symbolic-ref", "-q", "HEAD")
	if err != nil {
		return p, apperr.Invalid("git switch to the branch to merge into, then run it again",
			"the host repository %s is on no branch (detached HEAD)", g.Repo)
	}
	p.Into = strings.TrimPrefix(strings.TrimSpace(head), "refs/heads/")
	if p.Head, err = g.Run(ctx, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err != nil {
		return p, apperr.Invalid("commit something on it first", "the host's branch %s has no commits yet", p.Into)
	}
	p.Head = strings.TrimSpace(p.Head)
	ns := Namespace(req.Sandbox)
	refs, err := g.Refs(ctx, ns)
	if err != nil {
		return p, err
	}
	branches := sandboxBranches(refs, ns)
	p.Branch = req.Branch
	if p.Branch == "" {
		p.Branch = req.Current
	}
	if p.Branch == "" {
		return p, apperr.Invalid(fmt.Sprintf("name one: paddock merge %s BRANCH (its branches: %s)", req.Sandbox, strings.Join(branches, ", ")),
			"sandbox %q is on no branch (its HEAD is detached)", req.Sandbox)
	}
	if _, ok := refs[ns+p.Branch]; !ok {
		return p, apperr.Invalid(fmt.Sprintf("its branches: %s", strings.Join(branches, ", ")),
			"sandbox %q has no branch %q", req.Sandbox, p.Branch)
	}
	p.Ref = ns + p.Branch
	wip := ns + WIPBranch + "-" + p.Branch
	if p.Branch == req.Current {
		wip = ns + WIPBranch
	}
	if id, ok := refs[wip]; ok && id != refs[p.Ref] {
		if parent, err := g.Run(ctx, "rev-parse", "--verify", "-q", id+"^1"); err == nil && strings.TrimSpace(parent) == refs[p.Ref] {
			p.WIPRef = wip
			if req.WIP {
				p.Ref = wip
			} else {
				p.Uncommitted = true
			}
		}
	}
	p.Commit = refs[p.Ref]
	if req.Expect != "" && !strings.HasPrefix(p.Commit, req.Expect) {
		return p, apperr.Conflict("look at it again, then merge", "the agent's %s moved since it was shown (now %s, shown %s)", termtext.Escape(p.Branch), Short(p.Commit), Short(req.Expect))
	}
	log, err := g.Run(ctx, "log", "--no-show-signature", "--format=%h %s", "--end-of-options", p.Head+".."+p.Commit)
	if err != nil {
		return p, err
	}
	p.Commits, p.Files = append([]string{}, lines(log)...), []string{} // [] in JSON, not null
	if p.UpToDate() {
		return p, nil
	}
	p.FastForward = g.isAncestor(ctx, p.Head, p.Commit)
	from := p.Head
	if !p.FastForward {
		mb, err := g.Run(ctx, "merge-base", p.Head, p.Commit)
		if err != nil {
			return p, err
		}
		from = strings.TrimSpace(mb)
	}
	files, err := g.Run(ctx, "diff", "--no-ext-diff", "--no-textconv", "--name-status", "--end-of-options", from, p.Commit)
	if err != nil {
		return p, err
	}
	p.Files = append(p.Files, lines(files)...)
	p.RunsOnHost = append([]HostCode{}, g.RunsOnHost(ctx, Result{Updates: []Update{{Ref: p.Ref, Old: from, New: p.Commit, Files: p.Files}}}, from)...)
	if err := g.checkDrivers(ctx, p, from); err != nil {
		return p, err
	}
	return p, nil
}

// Merge runs a planned merge: a fast-forward when the plan is one, else a merge commit,
// signed as the user's config says unless unsigned (the daemon's merge, where no
// passphrase prompt can ask). A merge that conflicts is aborted, leaving the host as it
// was (exit 4, the files named).
func (g *Git) Merge(ctx context.Context, p MergePlan, unsigned bool) (MergeResult, error) {
	r := MergeResult{MergePlan: p}
	if p.UpToDate() {
		r.New = p.Head
		return r, nil
	}
	// The host may have moved since the plan: merge what was planned, into what it was planned on.
	if err := g.hostReady(ctx); err != nil {
		return r, err
	}
	if now, _ := g.Run(ctx, "rev-parse", "--verify", "-q", "HEAD"); strings.TrimSpace(now) != p.Head {
		return r, apperr.Conflict("run it again", "the host's branch %s moved since the merge was planned", p.Into)
	}
	msg := fmt.Sprintf("Merge the agent's work from sandbox %s (%s)", p.Sandbox, p.Branch)
	args := []string{"-c", "merge.autoStash=false", "-c", "merge.verifySignatures=false"}
	if unsigned {
		args = append(args, "-c", "commit.gpgSign=false")
	}
	// Once git starts, it finishes or is undone, whoever cancels (a browser gone, Ctrl-C):
	// a merge cut off halfway would leave the user's repository mid-merge.
	ctx = context.WithoutCancel(ctx)
	// --no-overwrite-ignore: a file the agent committed never replaces the user's ignored
	// one (a .env, a tool under .venv or node_modules); git refuses and changes nothing.
	// --commit --no-squash: the user's branch.NAME.mergeOptions cannot leave it half done.
	_, err := g.Run(ctx, append(args, "merge", "--no-edit", "--ff", "--commit", "--no-squash", "--no-overwrite-ignore",
		"--no-stat", "--no-log", "-m", msg, "--end-of-options", p.Commit)...)
	if err != nil {
		conflicted, _ := g.Run(ctx, "diff", "--name-only", "--diff-filter=U")
		if g.inProgress(ctx) != "" {
			g.Run(ctx, "merge", "--abort")
		}
		if c := lines(conflicted); len(c) > 0 {
			return r, apperr.Conflict(fmt.Sprintf("merge it by hand: git merge %s", termtext.Escape(p.Ref)),
				"the agent's %s conflicts with %s in %s; nothing was changed", termtext.Escape(p.Branch), p.Into, strings.Join(c, ", "))
		}
		return r, apperr.Invalid("", "git merge refused: %s", termtext.Escape(strings.TrimSpace(err.Error())))
	}
	now, err := g.Run(ctx, "rev-parse", "HEAD")
	r.New = strings.TrimSpace(now)
	return r, err
}

// hostReady refuses a host repository mid-merge, rebase, cherry-pick, revert or bisect,
// or with uncommitted changes to tracked files (untracked files are the user's, and git
// refuses a merge that would overwrite one).
func (g *Git) hostReady(ctx context.Context) error {
	if what := g.inProgress(ctx); what != "" {
		return apperr.Invalid("finish or abort it (git status says how), then run it again",
			"the host repository %s is in the middle of a %s", g.Repo, what)
	}
	st, err := g.Run(ctx, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules=none")
	if err != nil {
		return err
	}
	if dirty := lines(st); len(dirty) > 0 {
		if len(dirty) > 5 {
			dirty = append(dirty[:5], "...")
		}
		return apperr.Invalid("commit or stash them (git stash), then run it again",
			"the host repository %s has uncommitted changes: %s", g.Repo, strings.Join(dirty, "; "))
	}
	return nil
}

// inProgress names the operation the host repository is in the middle of, or "".
func (g *Git) inProgress(ctx context.Context) string {
	dir, err := g.Run(ctx, "rev-parse", "--absolute-git-dir")
	if dir = strings.TrimSpace(dir); err != nil || dir == "" {
		return ""
	}
	for _, s := range []struct{ file, what string }{
		{"MERGE_HEAD", "merge"}, {"rebase-merge", "rebase"}, {"rebase-apply", "rebase"},
		{"CHERRY_PICK_HEAD", "cherry-pick"}, {"REVERT_HEAD", "revert"}, {"BISECT_LOG", "bisect"},
	} {
		if _, err := os.Lstat(filepath.Join(dir, s.file)); err == nil {
			return s.what
		}
	}
	return ""
}

// isAncestor says whether a is an ancestor of b.
func (g *Git) isAncestor(ctx context.Context, a, b string) bool {
	_, err := g.Run(ctx, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// sandboxBranches are the sandbox's branches among its fetched refs, sorted, made safe
// to print.
func sandboxBranches(refs map[string]string, ns string) []string {
	var out []string
	for ref := range refs {
		b := strings.TrimPrefix(ref, ns)
		if b != WIPBranch && !strings.HasPrefix(b, WIPBranch+"-") {
			out = append(out, b)
		}
	}
	sort.Strings(out)
	return escaped(out) // the sandbox names them: they are printed
}

// namedDrivers are the drivers a .gitattributes file names, as "filter.NAME",
// "merge.NAME" and "diff.NAME" (in a macro's definition too).
func namedDrivers(text string) []string {
	var out []string
	for _, word := range strings.Fields(text) {
		kind, name, ok := strings.Cut(word, "=")
		if ok && name != "" && (kind == "filter" || kind == "merge" || kind == "diff") && !slices.Contains(out, kind+"."+name) {
			out = append(out, kind+"."+name)
		}
	}
	return out
}

// checkDrivers refuses a merge whose incoming .gitattributes (any changed since from)
// name a filter, merge or diff driver the host's config defines: the checkout that ends
// the merge, or a later merge or diff, would run it on the sandbox's content.
func (g *Git) checkDrivers(ctx context.Context, p MergePlan, from string) error {
	defined := g.definedDrivers(ctx)
	if len(defined) == 0 {
		return nil
	}
	// The names as git has them (-z): a listing for people quotes a name with a byte
	// outside ASCII, and a .gitattributes under such a directory must not pass unread.
	changed, err := g.Run(ctx, "diff", "--no-ext-diff", "--no-textconv", "--no-renames", "--name-only", "-z", "--diff-filter=d", "--end-of-options", from, p.Commit)
	if err != nil {
		return err
	}
	for _, name := range strings.Split(changed, "\x00") {
		if path.Base(name) != ".gitattributes" {
			continue
		}
		text, err := g.Run(ctx, "cat-file", "blob", p.Commit+":"+name)
		if err != nil {
			return err
		}
		var named []string
		for _, d := range namedDrivers(text) {
			if defined[d] {
				named = append(named, termtext.Escape(strings.Replace(d, ".", "=", 1)))
			}
		}
		if len(named) > 0 {
			shown := termtext.Escape(name)
			return apperr.Invalid(fmt.Sprintf("read it: git show %s:%s; if you trust it, merge by hand: git merge %s", termtext.Escape(p.Ref), shown, termtext.Escape(p.Ref)),
				"the agent's %s changes %s to name %s, which your git config defines: merging it would run that program on the sandbox's files; paddock merge does not",
				termtext.Escape(p.Branch), shown, strings.Join(named, ", "))
		}
	}
	return nil
}

// definedDrivers are the drivers the host's config (the repository's, the user's and
// the system's) defines, as "filter.NAME", "merge.NAME" and "diff.NAME".
func (g *Git) definedDrivers(ctx context.Context) map[string]bool {
	cmd := exec.CommandContext(ctx, "git", "-C", g.Repo, "config", "--name-only", "--get-regexp", `^(filter|merge|diff)\..+\.(clean|smudge|process|driver|command|textconv)$`)
	out, _ := cmd.Output()
	defined := map[string]bool{}
	for _, key := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if i := strings.LastIndex(key, "."); i > 0 {
			defined[key[:i]] = true
		}
	}
	return defined
}
