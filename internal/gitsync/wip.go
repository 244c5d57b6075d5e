package gitsync

// WIPScript runs inside the sandbox in /workspace (or a worktree): it records the
// checkout's uncommitted and untracked work (ignored files excepted) as a commit on top
// of HEAD, with a temporary index, so neither the working tree nor the agent's index
// changes, and points refs/paddock-wip/NAME at it ($1 is NAME). With nothing
// uncommitted, the ref points at HEAD. The ref is written as itself (--no-deref): a sync
// may have left it a symbolic ref to the checked-out branch (serveScript), which must not
// move. A snapshot's WIP also follows WIPRules. Hooks and
// fsmonitor are off (SandboxGitEnv), so that whatever the agent configured cannot break a
// sync. A recording killed part way (the guest kills what it ran when the daemon goes) can
// leave the ref's lock behind: the next one removes it.
const WIPScript = WIPRules + `set -e
ref="refs/paddock-wip/$1"
head=$(git rev-parse --verify -q HEAD) || { echo "the sandbox's repository has no commits yet" >&2; exit 3; }
lock="$(git rev-parse --git-path "$ref").lock"
if command -v flock >/dev/null 2>&1; then
  # One recording at a time; a ref lock found while holding this one was left by a
  # recording killed mid-write (a daemon killed while it waited), never by a live one.
  exec 9>"$(git rev-parse --git-common-dir)/paddock-wip.lock"
  flock 9
  rm -f "$lock"
elif [ -n "$(find "$lock" -mmin +1 2>/dev/null)" ]; then
  rm -f "$lock"
fi
` + WIPIndex + `tree=$(git write-tree)
old=$(git rev-parse -q --verify "$ref^{commit}" || true)
if [ "$tree" = "$(git rev-parse "$head^{tree}")" ]; then
  commit=$head
elif [ -n "$old" ] && [ "$(git rev-parse "$old^{tree}")" = "$tree" ] && [ "$(git rev-parse -q --verify "$old^" || true)" = "$head" ]; then
  commit=$old # the same work as last time: the same commit, so a sync says nothing new
else
  commit=$(GIT_AUTHOR_NAME=paddock GIT_AUTHOR_EMAIL=paddock@localhost GIT_COMMITTER_NAME=paddock GIT_COMMITTER_EMAIL=paddock@localhost \
    git commit-tree "$tree" -p "$head" -m "paddock: uncommitted work in the sandbox")
fi
git update-ref --no-deref "$ref" "$commit"
`

// WIPRules defines wip_rules, which a snapshot applies to the index of its WIP commit
// (set up by the caller, after git add -A), saying what it did on stdout:
//   - with PADDOCK_WIP_MAX_BYTES, new files larger than that are left out ("big PATH");
//   - with PADDOCK_WIP_BACKUP, the project's .paddock-backup file, one pattern a line in
//     the manner of .gitignore (a name alone matches at any depth, a leading / anchors,
//     a trailing / means a directory, # starts a comment), leaves out new files that
//     match ("excluded PATH"), and with a leading ! takes back files git ignores
//     ("included PATH"). Files git tracks are never left out: they would read as deleted.
const WIPRules = `wip_rules() {
  if [ "${PADDOCK_WIP_MAX_BYTES:-0}" -gt 0 ] && [ -z "$wip_big_done" ]; then
    git diff --cached --name-only -z --diff-filter=A | xargs -0 -r sh -c 'for f; do [ -f "$f" ] && [ "$(stat -c %s -- "$f")" -gt "$PADDOCK_WIP_MAX_BYTES" ] && git rm -q --cached -- "$f" && printf "big %s\n" "$f"; done; true' sh
  fi
  { [ -n "$PADDOCK_WIP_BACKUP" ] && [ -f .paddock-backup ]; } || return 0
  while IFS= read -r p || [ -n "$p" ]; do
    case "$p" in ''|'#'*) continue ;; esac
    neg=
    case "$p" in '!'*) neg=1; p=${p#!} ;; esac
    case "$p" in /*) p=${p#/} ;; */*) ;; *) p="**/$p" ;; esac
    case "$p" in */) p="$p**" ;; esac
    if [ -n "$neg" ]; then
      git add -f -A -v -- ":(glob)$p" 2>/dev/null | sed -n "s/^add '\(.*\)'$/included \1/p"
    else
      git diff --cached --name-only -z --diff-filter=A -- ":(glob)$p" | xargs -0 -r sh -c 'for f; do git rm -q --cached -- "$f" && printf "excluded %s\n" "$f"; done; true' sh
    fi
  done < .paddock-backup
  return 0
}
`

// WIPIndex stages the work in a temporary copy of the index, as a WIP commit holds it
// (the rules of WIPRules applied), leaving the agent's own index as it is. With
// PADDOCK_WIP_MAX_BYTES, new files larger than that are left out before git add reads
// them ("big PATH"): git would otherwise hash and store each whole (a sparse file of
// 64 GiB costs minutes), only for wip_rules to drop it. A tracked file changed since
// the index saw it (by its stat, unread) and over the bound keeps the index's version
// ("big PATH" too): left out, it would read as deleted; read, a `truncate -s 50G`
// of a tracked file costs what a new one would. A git older than --pathspec-from-file
// (2.25) adds them, and wip_rules drops the new ones, as before.
const WIPIndex = `index=$(mktemp)
big=$(mktemp)
trap 'rm -f "$index" "$big"' EXIT
cp "$(git rev-parse --git-path index)" "$index" 2>/dev/null || true
export GIT_INDEX_FILE="$index"
if [ "${PADDOCK_WIP_MAX_BYTES:-0}" -gt 0 ]; then
  printf '.\0' > "$big"
  { git ls-files -z --others --exclude-standard; git diff-files --name-only -z --diff-filter=M; } | xargs -0 -r sh -c 'for f; do [ -f "$f" ] && [ "$(stat -c %s -- "$f")" -gt "$PADDOCK_WIP_MAX_BYTES" ] && printf ":(exclude,literal)%s\0" "$f" >> "$0" && printf "big %s\n" "$f"; done; true' "$big"
  if git add -A --pathspec-from-file="$big" --pathspec-file-nul 2>/dev/null; then wip_big_done=1; else git add -A; fi
else
  git add -A
fi
wip_rules
`

// SandboxGitEnv turns off hooks and fsmonitor for the git commands paddock itself runs
// inside a sandbox (WIP commits, upload-pack, receive-pack): environment config beats the
// repository's config and its includes.
var SandboxGitEnv = []string{
	"GIT_CONFIG_COUNT=2",
	"GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/dev/null",
	"GIT_CONFIG_KEY_1=core.fsmonitor", "GIT_CONFIG_VALUE_1=false",
}
