package gitsync

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/paddockhq/paddock/internal/termtext"
)

// Namespace is where a sandbox's work lands in the host repository.
func Namespace(sandbox string) string { return "refs/paddock/" + sandbox + "/" }

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
// described once, and the git commands run side by side, a few at a time.
func (g *Git) describe(ctx context.Context, before, after map[string]string, base string) Result {
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
	run := func(dst *[]string, args ...string) {
		defer running.Done()
		slots <- struct{}{}
		defer func() { <-slots }()
		if out, err := g.Run(ctx, args...); err == nil {
			*dst = lines(out)
		}
	}
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
		running.Add(2)
		go run(&d.commits, "log", "--format=%h %s", sp.from+".."+sp.to)
		go run(&d.files, "diff", "--no-ext-diff", "--no-textconv", "--name-status", sp.from, sp.to)
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
