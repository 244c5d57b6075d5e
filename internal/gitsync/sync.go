package gitsync

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/paddockhq/paddock/internal/termtext"
)

// Namespace is where a sandbox's work lands in the host repository.
func Namespace(sandbox string) string { return "refs/paddock/" + sandbox + "/" }

// Short is a commit's id as it is shown: its first 12 characters.
func Short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// WIPBranch names the ref of the main checkout's uncommitted work; a worktree's is
// "wip-" + its branch.
const WIPBranch = "wip"

// Update is one ref that a fetch changed.
type Update struct {
	Ref string `json:"ref"`
	Old string `json:"old,omitempty"`
	New string `json:"new"`
	// Commits are the new commits, newest first, "abbrev subject".
	Commits []string `json:"commits,omitempty"`
	// Files are the files changed between Old (or the base) and New, "STATUS\tPATH".
	Files []string `json:"files,omitempty"`
}

// Result is what a sync fetched.
type Result struct {
	Updates []Update `json:"updates"`
	// LeftOut are new untracked files the WIP commits leave out for their size
	// (MaxWIPFileBytes), by their paths in the sandbox.
	LeftOut []string `json:"left_out,omitempty"`
}

// BranchClashError is a sandbox branch whose name would clash with paddock's own refs:
// the one sync failure that is a conflict with the sandbox's state, not a failure of git
// or of the connection.
type BranchClashError struct {
	Sandbox, Branch string
}

func (e *BranchClashError) Error() string {
	return fmt.Sprintf("the sandbox's branch %q would clash with paddock's %s%s refs: rename it in the sandbox (git branch -m)",
		e.Branch, Namespace(e.Sandbox), WIPBranch)
}

// describe says what changed between two listings of the namespace's refs: for each
// ref that moved, its new commits and changed files since its old value (or base, for a
// new ref). Refs that moved alike (a branch and the WIP ref of a clean checkout) are
// described once, each with one git log that also lists each commit's files: for one new
// commit on top of the old value, the usual sync, those are the ref's changes; otherwise
// a git diff says them. Spans are described side by side, a few at a time. log, when not
// nil, is spanLogEarly started early: the first span's log is it, and it is ended if unused.
func (g *Git) describe(ctx context.Context, before, after map[string]string, base string, log *early) Result {
	if log != nil {
		defer func() {
			if log != nil {
				log.end()
			}
		}()
	}
	names := make([]string, 0, len(after))
	for ref := range after {
		names = append(names, ref)
	}
	sort.Strings(names)
	type span struct{ from, to string }
	type description struct{ commits, files []string }
	var (
		res       Result
		described = map[span]*description{}
		running   sync.WaitGroup
		slots     = make(chan struct{}, 4)
	)
	for _, ref := range names {
		if before[ref] == after[ref] {
			continue
		}
		u := Update{Ref: ref, Old: before[ref], New: after[ref]}
		res.Updates = append(res.Updates, u)
		sp := span{u.Old, u.New}
		if sp.from == "" {
			sp.from = base
		}
		if sp.from == "" || described[sp] != nil {
			continue
		}
		d := &description{}
		described[sp] = d
		var own *early
		if objectID(sp.from) && objectID(sp.to) {
			own, log = log, nil
		}
		running.Add(1)
		go func() {
			defer running.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			d.commits, d.files = g.span(ctx, sp.from, sp.to, own)
		}()
	}
	running.Wait()
	for i, u := range res.Updates {
		from := u.Old
		if from == "" {
			from = base
		}
		if d := described[span{from, u.New}]; d != nil {
			res.Updates[i].Commits, res.Updates[i].Files = d.commits, d.files
		}
	}
	return res
}

// span lists the commits in from..to, newest first ("abbrev subject"), and the files that
// changed from from to to ("STATUS\tPATH"), escaped for printing.
//
// The log marks each commit's line with \x01 before its parents and after them; a file
// line never starts with \x01 (git quotes a path with control characters) and a subject
// never holds a newline, so whatever a commit message holds, it stays within its line.
//
// log, when not nil, is spanLogEarly started early, which reads the range on its input: from
// and to are then object ids (a line of --stdin cannot be an option).
func (g *Git) span(ctx context.Context, from, to string, log *early) (commits, files []string) {
	var out string
	var err error
	if log != nil {
		out, err = log.finish(from + ".." + to + "\n")
	} else {
		out, err = g.Run(ctx, append(slices.Clip(spanLog), "--end-of-options", from+".."+to)...)
	}
	if err != nil {
		return nil, nil
	}
	var parents []string
	var perCommit []string // the files of the one commit, while there is one
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "\x01"):
			p, subject, _ := strings.Cut(l[1:], "\x01")
			commits = append(commits, subject)
			parents = strings.Fields(p)
		case l != "" && len(commits) == 1:
			perCommit = append(perCommit, l)
		}
	}
	commits = escaped(commits)
	if len(commits) == 1 && len(parents) == 1 && parents[0] == from {
		return commits, escaped(perCommit)
	}
	if diff, err := g.Run(ctx, "diff", "--no-ext-diff", "--no-textconv", "--name-status", "--end-of-options", from, to); err == nil {
		files = lines(diff)
	}
	return commits, files
}

// spanLog is span's git log, without its range: given after it, or on stdin (spanLogEarly).
var spanLog = []string{"log", "--no-show-signature", "--format=%x01%P%x01%h %s", "--name-status"}

// spanLogEarly is spanLog reading its range from stdin, for startEarly.
var spanLogEarly = append(slices.Clip(spanLog), "--stdin")

// escaped makes lines from the sandbox safe to print (see lines); nil stays nil.
func escaped(ls []string) []string {
	for i, l := range ls {
		ls[i] = termtext.Escape(l)
	}
	return ls
}

// lines splits git's output into lines made safe to print: commit subjects and file
// names come from the sandbox, and a control character in them (an escape sequence that
// rewrites the terminal, retitles it or fakes a prompt) is shown as \xNN instead.
func lines(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	out := strings.Split(s, "\n")
	for i, l := range out {
		out[i] = termtext.Escape(l)
	}
	return out
}
