package gitsync

// WIPScript runs inside the sandbox in /workspace (or a worktree): it records the
// checkout's uncommitted and untracked work (ignored files excepted) as a commit on top
// of HEAD, with a temporary index, so neither the working tree nor the agent's index
// changes, and points refs/paddock-wip/NAME at it ($1 is NAME). With nothing
// uncommitted, the ref points at HEAD. It prints the ref's commit.
const WIPScript = `set -e
ref="refs/paddock-wip/$1"
head=$(git rev-parse --verify -q HEAD) || { echo "the sandbox's repository has no commits yet" >&2; exit 3; }
index=$(mktemp)
trap 'rm -f "$index"' EXIT
cp "$(git rev-parse --git-path index)" "$index" 2>/dev/null || true
export GIT_INDEX_FILE="$index"
git add -A
tree=$(git write-tree)
if [ "$tree" = "$(git rev-parse "$head^{tree}")" ]; then
  commit=$head
else
  commit=$(GIT_AUTHOR_NAME=paddock GIT_AUTHOR_EMAIL=paddock@localhost GIT_COMMITTER_NAME=paddock GIT_COMMITTER_EMAIL=paddock@localhost \
    git commit-tree "$tree" -p "$head" -m "paddock: uncommitted work in the sandbox")
fi
git update-ref "$ref" "$commit"
echo "$commit"
`
