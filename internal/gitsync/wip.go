package gitsync

// WIPScript runs inside the sandbox in /workspace (or a worktree): it records the
// checkout's uncommitted and untracked work (ignored files excepted) as a commit on top
// of HEAD, with a temporary index, so neither the working tree nor the agent's index
// changes, and points refs/paddock-wip/NAME at it ($1 is NAME). With PADDOCK_WIP_MAX_BYTES
// set, new files larger than that are left out. With nothing
// uncommitted, the ref points at HEAD. Hooks and fsmonitor
// are off (SandboxGitEnv), so that whatever the agent configured cannot break a sync.
const WIPScript = `set -e
ref="refs/paddock-wip/$1"
head=$(git rev-parse --verify -q HEAD) || { echo "the sandbox's repository has no commits yet" >&2; exit 3; }
index=$(mktemp)
trap 'rm -f "$index"' EXIT
cp "$(git rev-parse --git-path index)" "$index" 2>/dev/null || true
export GIT_INDEX_FILE="$index"
git add -A
if [ "${PADDOCK_WIP_MAX_BYTES:-0}" -gt 0 ]; then
  # A snapshot leaves out new files over its size limit (binaries, build outputs).
  git diff --cached --name-only -z --diff-filter=A | xargs -0 -r sh -c 'for f; do [ -f "$f" ] && [ "$(stat -c %s -- "$f")" -gt "$PADDOCK_WIP_MAX_BYTES" ] && git rm -q --cached -- "$f"; done; true' sh
fi
tree=$(git write-tree)
old=$(git rev-parse -q --verify "$ref^{commit}" || true)
if [ "$tree" = "$(git rev-parse "$head^{tree}")" ]; then
  commit=$head
elif [ -n "$old" ] && [ "$(git rev-parse "$old^{tree}")" = "$tree" ] && [ "$(git rev-parse -q --verify "$old^" || true)" = "$head" ]; then
  commit=$old # the same work as last time: the same commit, so a sync says nothing new
else
  commit=$(GIT_AUTHOR_NAME=paddock GIT_AUTHOR_EMAIL=paddock@localhost GIT_COMMITTER_NAME=paddock GIT_COMMITTER_EMAIL=paddock@localhost \
    git commit-tree "$tree" -p "$head" -m "paddock: uncommitted work in the sandbox")
fi
git update-ref "$ref" "$commit"
`

// SandboxGitEnv turns off hooks and fsmonitor for the git commands paddock itself runs
// inside a sandbox (WIP commits, upload-pack, receive-pack): environment config beats the
// repository's config and its includes.
var SandboxGitEnv = []string{
	"GIT_CONFIG_COUNT=2",
	"GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/dev/null",
	"GIT_CONFIG_KEY_1=core.fsmonitor", "GIT_CONFIG_VALUE_1=false",
}
