package gitsync

import (
	"context"
	"fmt"
	"sort"
	"strings"

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

// CheckBranches refuses branch names that would clash with the WIP refs in the host's
// namespace of the sandbox, before anything is fetched.
func CheckBranches(sandbox string, branches []string) error {
	for _, branch := range branches {
		if branch == WIPBranch || strings.HasPrefix(branch, WIPBranch+"/") || strings.HasPrefix(branch, WIPBranch+"-") {
			return &BranchClashError{Sandbox: sandbox, Branch: branch}
		}
	}
	return nil
}

// Fetch fetches every branch of the sandbox, and its WIP refs, into Namespace(sandbox)
// through the git-remote-paddock helper, in one fetch. base is the commit the sandbox
// started from (to describe a new ref's changes). Call CheckBranches first.
func (g *Git) Fetch(ctx context.Context, sandbox, base string) (Result, error) {
	ns := Namespace(sandbox)
	remote := "paddock::" + sandbox
	refspecs := []string{"+refs/heads/*:" + ns + "*", "+refs/paddock-wip/*:" + ns + "*"}
	before, err := g.Refs(ctx, ns)
	if err != nil {
		return Result{}, err
	}
	args := append([]string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", remote}, refspecs...)
	if _, err := g.Run(ctx, args...); err != nil {
		return Result{}, err
	}
	after, err := g.Refs(ctx, ns)
	if err != nil {
		return Result{}, err
	}
	var res Result
	names := make([]string, 0, len(after))
	for ref := range after {
		names = append(names, ref)
	}
	sort.Strings(names)
	for _, ref := range names {
		if before[ref] == after[ref] {
			continue
		}
		u := Update{Ref: ref, Old: before[ref], New: after[ref]}
		from := u.Old
		if from == "" {
			from = base
		}
		if from != "" {
			if log, err := g.Run(ctx, "log", "--format=%h %s", from+".."+u.New); err == nil {
				u.Commits = lines(log)
			}
			if diff, err := g.Run(ctx, "diff", "--no-ext-diff", "--no-textconv", "--name-status", from, u.New); err == nil {
				u.Files = lines(diff)
			}
		}
		res.Updates = append(res.Updates, u)
	}
	return res, nil
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
