package gitsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoCommits is returned when the sandbox's repository has no commits yet.
var ErrNoCommits = errors.New("the sandbox's repository has no commits yet")

// Exec runs a command in the sandbox and returns its stdout, stderr and exit code.
type Exec func(ctx context.Context, argv, env []string) (stdout, stderr string, code int, err error)

// recordScript records the uncommitted work of /workspace and of every worktree, then
// lists the sandbox's branches.
const recordScript = wipBigNamed + `wip() { sh -c "$WIP" sh "$1"; }
said=$(mktemp)
trap 'rm -f "$said"' EXIT
cd /workspace && wip ` + WIPBranch + ` > "$said" || exit $?
wip_big_named /workspace < "$said"
git worktree list --porcelain | sed -n 's/^worktree //p' | while read -r dir; do
  case "$dir" in /workspace/.worktrees/*) (cd "$dir" && wip "` + WIPBranch + `-${dir#/workspace/.worktrees/}" > "$said" && wip_big_named "$dir" < "$said") ;; esac
done
git for-each-ref --format='branch %(refname:short)' refs/heads
`

// wipBigNamed defines wip_big_named DIR, which turns each "big PATH" line of a WIP
// recording's output on its input into "paddock-big DIR/PATH" (what bigPaths reads).
const wipBigNamed = `wip_big_named() { while IFS= read -r l; do case "$l" in "big "*) printf 'paddock-big %s/%s\n' "$1" "${l#big }" ;; esac; done; }
`

// bigPaths are the paths of the "paddock-big PATH" lines of out (wipBigNamed).
func bigPaths(out string) []string {
	var paths []string
	for _, l := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(l, "paddock-big "); ok {
			paths = append(paths, p)
		}
	}
	return paths
}

// RecordWIP makes the sandbox record its uncommitted work on its paddock-wip refs and
// returns its branches, and the new files the WIP commits leave out for their size
// (PADDOCK_WIP_MAX_BYTES), by their paths inside.
func RecordWIP(ctx context.Context, exec Exec) (branches, big []string, err error) {
	stdout, stderr, code, err := exec(ctx, []string{"sh", "-c", recordScript}, append([]string{"WIP=" + WIPScript}, SandboxGitEnv...))
	if err != nil {
		return nil, nil, err
	}
	switch code {
	case 0:
		for _, l := range strings.Split(stdout, "\n") {
			if b, ok := strings.CutPrefix(l, "branch "); ok {
				branches = append(branches, b)
			}
		}
		return branches, bigPaths(stdout), nil
	case 3:
		return nil, nil, ErrNoCommits
	}
	return nil, nil, fmt.Errorf("record the sandbox's uncommitted work: exit %d: %s", code, strings.TrimSpace(stderr))
}

// HelperName is the name git looks for to handle paddock::SANDBOX URLs.
const HelperName = "git-remote-paddock"

// HelperDir returns dir/bin holding git-remote-paddock, a link to exe, for git to find.
func HelperDir(dir, exe string) (string, error) {
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		return "", err
	}
	link := filepath.Join(bin, HelperName)
	if cur, err := os.Readlink(link); err == nil && cur == exe {
		return bin, nil
	}
	tmp := link + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(exe, tmp); err != nil {
		return "", err
	}
	return bin, os.Rename(tmp, link)
}
