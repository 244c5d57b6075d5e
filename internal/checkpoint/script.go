package checkpoint

// gitEnv is the environment of the scripts that stage the workspace into the
// checkpoints' own index (take, restore): hooks and fsmonitor off, as every git run in a
// sandbox for paddock (gitsync.SandboxGitEnv), and a file's stat compared by its time,
// size and mode only (core.checkStat=minimal, core.trustctime=false). A fork's copy of
// the workspace and of that index has other inodes and change times than its parent's
// files, and git would otherwise read and hash every file again (2 to 3 s for 500 MB)
// before the fork's first checkpoint or restore; git's check of racily clean entries
// (a file changed in the second the index was written) still reads those again.
var gitEnv = []string{
	"GIT_CONFIG_COUNT=4",
	"GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/dev/null",
	"GIT_CONFIG_KEY_1=core.fsmonitor", "GIT_CONFIG_VALUE_1=false",
	"GIT_CONFIG_KEY_2=core.checkStat", "GIT_CONFIG_VALUE_2=minimal",
	"GIT_CONFIG_KEY_3=core.trustctime", "GIT_CONFIG_VALUE_3=false",
}

// takeScript records a checkpoint inside the sandbox, run in /workspace in one round
// trip to the guest, with git's hooks and fsmonitor off (gitsync.SandboxGitEnv):
//
//	$1 the tree the counts are against (the checkpoint before; empty: HEAD's tree)
//	$2 $3 the session's last checkpoint's tree and conversation blob, and $4 = 1 to
//	   record nothing when both are the same now ("same")
//	$5 the session's transcript (a glob: its newest match), empty for none
//	$6 the record's JSON without its closing brace, to which the script adds what it
//	   finds (tree, head, branch, counts, conversation); $7 the conversation's JSON
//	   without its closing brace (agent, resume id), empty for none
//	$8 the checkpoint's number, $9 its time (Unix seconds)
//	the rest: paths left out besides what git ignores, as git pathspecs
//
// The workspace is staged into an index of the checkpoints' own, kept between them
// (paddock/checkpoint-index in the repository: git add -A rehashes only what changed
// since; the first starts from a copy of the agent's index, for its stat data), never
// the agent's; ignored files are left out as git ignores them. The tree's commit C has
// the record as its message and, when there is a conversation, one parent: a commit
// whose tree holds the transcript's blob, so that it stays reachable and travels with
// the repository. refs/paddock/checkpoints/SEQ points at C. It prints KEY VALUE lines,
// then, when the conversation changed since the session's last checkpoint, "tail" and
// the transcript's last MiB (for the turn's prompt: tailBytes).
const takeScript = `set -e
base=$1 last_tree=$2 last_blob=$3 skip_same=$4 tglob=$5 meta=$6 conv=$7 seq=$8 now=$9
shift 9
found=$(git rev-parse --git-dir HEAD 2>/dev/null) || true
gitdir=${found%%"
"*}
[ -n "$gitdir" ] || { echo "/workspace holds no git repository" >&2; exit 3; }
head=${found#"$gitdir"}
head=${head#"
"}
case "$head" in *[!0-9a-f]*|'') head= ;; esac
idx=$gitdir/paddock/checkpoint-index
[ -d "$gitdir/paddock" ] || mkdir -p "$gitdir/paddock"
[ ! -e "$idx.lock" ] || rm -f "$idx.lock"
[ -f "$idx" ] || cp "$gitdir/index" "$idx" 2>/dev/null || true
export GIT_INDEX_FILE="$idx"
if [ $# -gt 0 ]; then
  git ls-files -z -- "$@" | git update-index -z --force-remove --stdin
  for p do set -- "$@" ":(exclude)$p"; shift; done
fi
git add -A -- . "$@"
tree=$(git write-tree)
branch=
read -r ref < "$gitdir/HEAD" || true
case "$ref" in "ref: refs/heads/"*) branch=${ref#ref: refs/heads/} ;; esac
tpath= blob= size=0
if [ -n "$tglob" ] && [ -n "$conv" ]; then
  case "$tglob" in
  *[*?[]*) tpath=$(ls -td -- $tglob 2>/dev/null | head -n 1) ;;
  *) tpath=$tglob ;;
  esac
  case "$tpath" in *[[:cntrl:]]*) tpath= ;; esac
  if [ -n "$tpath" ] && [ -f "$tpath" ]; then
    blob=$(git hash-object -w -- "$tpath")
    size=$(git cat-file -s "$blob")
  else
    tpath=
  fi
fi
if [ "$skip_same" = 1 ] && [ "$tree" = "$last_tree" ] && [ "$blob" = "$last_blob" ]; then
  echo same
  exit 0
fi
export GIT_AUTHOR_NAME=paddock GIT_AUTHOR_EMAIL=paddock@localhost GIT_COMMITTER_NAME=paddock GIT_COMMITTER_EMAIL=paddock@localhost
[ -n "$base" ] || base=$head
[ -n "$base" ] || base=4b825dc642cb6eb9a060e54bf8d69288fbee4904
files=0 added=0 deleted=0 bytes=0
if [ "$base" != "$tree" ]; then
  { git diff-tree -r --no-renames --raw --numstat "$base" "$tree" 2>/dev/null || true; } |
    awk -F'\t' -v out="$idx.stat" '/^:/ { split($1, f, " "); if (f[5] != "D") print f[4]; next }
      { n++; if ($1 != "-") a += $1; if ($2 != "-") d += $2 }
      END { printf "%d %d %d\n", n, a, d > out }' |
    git cat-file --batch-check='%(objectsize)' | awk 'NF == 1 { s += $1 } END { printf "%d\n", s }' > "$idx.bytes"
  read -r files added deleted < "$idx.stat"
  read -r bytes < "$idx.bytes"
fi
esc() { case "$1" in *[\\\"]*) printf '%s' "$1" | sed 's/[\\"]/\\&/g' ;; *) printf '%s' "$1" ;; esac; }
msg="$meta,\"tree\":\"$tree\""
[ -z "$head" ] || msg="$msg,\"head\":\"$head\""
[ -z "$branch" ] || msg="$msg,\"branch\":\"$(esc "$branch")\""
msg="$msg,\"files\":$files,\"added\":$added,\"deleted\":$deleted,\"bytes\":$bytes"
if [ -n "$blob" ]; then
  msg="$msg,\"conversation\":$conv,\"path\":\"$(esc "$tpath")\",\"blob\":\"$blob\",\"size\":$size}"
  t=$(printf '100644 blob %s\ttranscript\n' "$blob" | git mktree)
  t=$(GIT_AUTHOR_DATE="946684800 +0000" GIT_COMMITTER_DATE="946684800 +0000" git commit-tree --no-gpg-sign "$t" -m "paddock: conversation")
  c=$(GIT_AUTHOR_DATE="$now +0000" GIT_COMMITTER_DATE="$now +0000" git commit-tree --no-gpg-sign "$tree" -p "$t" -m "$msg}")
else
  c=$(GIT_AUTHOR_DATE="$now +0000" GIT_COMMITTER_DATE="$now +0000" git commit-tree --no-gpg-sign "$tree" -m "$msg}")
fi
git update-ref "refs/paddock/checkpoints/$seq" "$c"
printf 'commit %s\ntree %s\nhead %s\nbranch %s\npath %s\nblob %s\nsize %s\nfiles %s\nadded %s\ndeleted %s\nbytes %s\n' \
  "$c" "$tree" "$head" "$branch" "$tpath" "$blob" "$size" "$files" "$added" "$deleted" "$bytes"
if [ -n "$blob" ] && [ "$blob" != "$last_blob" ]; then
  echo tail
  tail -c 1048576 -- "$tpath"
fi
`

// tailBytes is how much of a changed transcript's end takeScript prints: enough to hold
// the turn's first message past its tools' output.
const tailBytes = 1 << 20

// pruneScript deletes the refs of pruned checkpoints ($@: their numbers) in the
// sandbox's repository; the objects only they held go at git's next gc.
const pruneScript = `for n do printf 'delete refs/paddock/checkpoints/%s\n' "$n"; done | git update-ref --stdin`

// readBackScript prints the records of the checkpoints the sandbox's repository holds
// (the messages of refs/paddock/checkpoints/*), one a line, each after its commit:
// for a sandbox restored from a snapshot or forked, whose daemon has no record of them.
const readBackScript = `git for-each-ref --format='%(objectname) %(contents:subject)' 'refs/paddock/checkpoints/'`
