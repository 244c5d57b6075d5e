package checkpoint

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// A rewind under way is marked in the sandbox's repository, at $(git rev-parse
// --git-path paddock/rewind): "COMMIT" from before the agent is stopped, "COMMIT SEQ"
// once the undo point #SEQ is taken and the files start to move; removed when the
// agent has been started again. A rewind cut off in the middle (the daemon killed)
// leaves it, and the rewind run again reads it (pendingRewind).

// checkScript checks that the sandbox's repository still holds a checkpoint's commit
// ($1) and its conversation's blob ($2, may be empty), prints the mark of a rewind
// cut off in the middle, if there is one ("pending COMMIT [SEQ]"), and marks this one.
const checkScript = `git cat-file -e "$1^{commit}" 2>/dev/null || exit 3
[ -z "$2" ] || git cat-file -e "$2" 2>/dev/null || exit 4
mark=$(git rev-parse --git-path paddock/rewind)
[ ! -f "$mark" ] || printf 'pending %s\n' "$(head -c 200 "$mark")"
mkdir -p "$(dirname "$mark")" && printf '%s\n' "$1" > "$mark"`

// pendingRewind is what the mark of a rewind cut off in the middle says: the commit it
// went to, and its undo point's Seq once it had taken it.
type pendingRewind struct {
	commit string
	undo   int
}

// markRewind checks that the sandbox's repository at dir holds what restoring cp needs,
// marks the rewind as under way, and returns the mark of one cut off in the middle (zero when none was).
func markRewind(ctx context.Context, c *guestclient.Client, dir string, cp wire.Checkpoint) (pendingRewind, error) {
	var p pendingRewind
	blob := ""
	if cp.Conversation != nil {
		blob = cp.Conversation.Blob
	}
	out, stderr, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", checkScript, "sh", cp.Commit, blob},
		Env: gitsync.SandboxGitEnv, Dir: dir}, 4096)
	if err != nil {
		return p, err
	}
	switch code {
	case 0:
	case 3, 4:
		what := "its files (commit " + short(cp.Commit) + ")"
		if code == 4 {
			what = "its conversation (blob " + short(blob) + ")"
		}
		return p, apperr.NotFound("see what is left with `paddock checkpoints "+target(cp.Sandbox, cp.Session)+"`",
			"checkpoint #%d is gone from the sandbox's repository: it no longer holds %s; nothing was changed", cp.Seq, what)
	default:
		return p, fmt.Errorf("read the sandbox's repository: exit %d: %s", code, strings.TrimSpace(stderr))
	}
	if rest, ok := strings.CutPrefix(strings.TrimSpace(out), "pending "); ok {
		f := strings.Fields(rest)
		if len(f) > 0 {
			p.commit = f[0]
		}
		if len(f) > 1 {
			p.undo, _ = strconv.Atoi(f[1])
		}
	}
	return p, nil
}

// unmarkRewind removes the mark of a rewind: it is over (done, or undone before the
// files moved).
func unmarkRewind(ctx context.Context, c *guestclient.Client) error {
	_, stderr, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", `rm -f "$(git rev-parse --git-path paddock/rewind)"`},
		Env: gitsync.SandboxGitEnv, Dir: inside.Workspace}, 4096)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr))
	}
	return err
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// restoreWork puts the workspace (the current directory) back to a checkpoint's files,
// commit $1, and HEAD and the checked-out branch back to $2 and $3 ($3 empty: HEAD
// detached at $2; $2 empty: a branch with no commit yet); $4 is the rewind's undo
// point's Seq, for its mark (0: no rewind, no mark); the rest of the arguments are the pathspecs a checkpoint
// leaves out.
//
// An index of its own holds the workspace as it is now (git add -A, as a checkpoint
// stages it: ignored files are not in it, and so never touched), then `git read-tree
// --reset -u` moves it to the checkpoint's tree: files the checkpoint lacks are
// deleted, those that differ written. git writes no file beyond a symbolic link: a
// link that stands where the checkpoint has a directory is removed and the directory
// made, so nothing outside /workspace is written through a link the sandbox planted.
// Then the branch and HEAD, and the agent's own index set to HEAD's tree (git reset
// -q), so that what was uncommitted at the checkpoint shows uncommitted again. The
// excluded paths are in neither index, so a checkpoint taken before they were excluded
// does not put them back either.
const restoreWork = `set -e
c=$1 head=$2 branch=$3 undo=$4
shift 4
mark=$(git rev-parse --git-path paddock/rewind)
index=$(git rev-parse --git-path paddock/rewind-index)
own=$(git rev-parse --git-path paddock/checkpoint-index)
if [ "$undo" != 0 ]; then mkdir -p "$(dirname "$mark")" && printf '%s %s\n' "$c" "$undo" > "$mark"; fi
rm -f "$index"
trap 'rm -f "$index" "$index.target"' EXIT
if [ -f "$own" ]; then cp "$own" "$index"; fi
target=$c^{tree}
if [ $# -gt 0 ]; then
  # The excluded paths, in neither index: a checkpoint older than the exclusion may
  # hold them, and they stay as they are.
  for p do set -- "$@" "${p#":(exclude)"}"; shift; done
  GIT_INDEX_FILE=$index git ls-files -z -- "$@" | GIT_INDEX_FILE=$index git update-index -z --force-remove --stdin
  GIT_INDEX_FILE=$index.target git read-tree "$target"
  GIT_INDEX_FILE=$index.target git ls-files -z -- "$@" | GIT_INDEX_FILE=$index.target git update-index -z --force-remove --stdin
  target=$(GIT_INDEX_FILE=$index.target git write-tree)
  rm -f "$index.target"
  for p do set -- "$@" ":(exclude)$p"; shift; done
fi
GIT_INDEX_FILE=$index git add -A -- . "$@"
echo "files $(GIT_INDEX_FILE=$index git diff-index --cached --no-renames --name-only "$target" -- | wc -l)"
GIT_INDEX_FILE=$index git read-tree --reset -u "$target"
if [ -n "$branch" ]; then
  if [ -n "$head" ]; then git update-ref "refs/heads/$branch" "$head"
  else git update-ref -d "refs/heads/$branch" 2>/dev/null || true; fi
  git symbolic-ref HEAD "refs/heads/$branch"
elif [ -n "$head" ]; then
  git update-ref --no-deref HEAD "$head"
fi
if git rev-parse -q --verify HEAD >/dev/null; then git reset -q; else git read-tree --empty; fi
`

// restoreScript runs restoreWork ($RESTORE) in a session of its own, its output in a
// file, under a lock a second restore waits for: the guest kills an exec's process group when the daemon that asked for it goes
// away (killed), and a restore cut off there would leave the workspace part way; in its
// own session it runs to its end, and the workspace is the checkpoint's. (Where there
// is no setsid that waits, it runs in the exec's group.)
const restoreScript = `log=$(git rev-parse --git-path paddock/rewind-log)
mkdir -p "$(dirname "$log")" || exit
# One restore at a time: the lock is held by the restore's own session too, so a
# rewind run again by a daemon that came back waits for the one its killed
# predecessor left running to its end (it held the restore's index lock).
exec 9>"$(git rev-parse --git-path paddock/rewind.lock)"
if command -v flock >/dev/null 2>&1; then flock 9; fi
if setsid -w true 2>/dev/null; then
  setsid -w sh -c "$RESTORE" sh "$@" >"$log" 2>&1 </dev/null
else
  sh -c "$RESTORE" sh "$@" >"$log" 2>&1 </dev/null
fi
code=$?
cat "$log"
rm -f "$log"
exit $code`

// restoreFilesIn puts the workspace of the repository at dir back to checkpoint cp's
// files (and its HEAD and branch), writing only beneath dir, without following a
// symbolic link the sandbox made; ignored files and the pathspecs excludes (as a
// checkpoint leaves them out) stay as they are. It returns how many files it wrote or
// deleted.
func restoreFilesIn(ctx context.Context, c *guestclient.Client, dir string, cp wire.Checkpoint, excludes []string) (int, error) {
	return restoreFilesFor(ctx, c, dir, cp, 0, excludes)
}

// restoreFilesFor is restoreFilesIn for the rewind whose undo point is #undo, which
// the rewind's mark then names.
func restoreFilesFor(ctx context.Context, c *guestclient.Client, dir string, cp wire.Checkpoint, undo int, excludes []string) (int, error) {
	if cp.Commit == "" {
		return 0, fmt.Errorf("checkpoint #%d has no commit", cp.Seq)
	}
	argv := append([]string{"sh", "-c", restoreScript, "sh", cp.Commit, cp.Head, cp.Branch, strconv.Itoa(undo)}, excludes...)
	out := tailbuf.Buffer{Max: 8 << 10}
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: argv, Env: append([]string{"RESTORE=" + restoreWork}, gitEnv...),
		Dir: dir, Stdout: &out, Stderr: &out})
	if err != nil {
		return 0, err
	}
	files, lines := 0, []string{}
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		if n, ok := strings.CutPrefix(line, "files "); ok {
			files, _ = strconv.Atoi(strings.TrimSpace(n))
		} else {
			lines = append(lines, line)
		}
	}
	if code != 0 {
		return 0, fmt.Errorf("exit %d: %s", code, strings.TrimSpace(strings.Join(lines, "\n")))
	}
	return files, nil
}

// conversationScript writes blob $1 of the repository in the current directory to the
// file $2, through a temporary file beside it renamed over it (a reader sees the old
// transcript or the new, never half), making its directory if it is missing.
const conversationScript = `set -e
mkdir -p "$(dirname "$2")"
tmp="$2.paddock-rewind"
git cat-file blob "$1" > "$tmp"
mv -f "$tmp" "$2"
`

// restoreConversation puts the transcript of cp's conversation back as it was at cp.
func restoreConversation(ctx context.Context, c *guestclient.Client, cp wire.Checkpoint) error {
	return restoreConversationIn(ctx, c, inside.Workspace, cp)
}

// restoreConversationIn is restoreConversation from the repository at dir.
func restoreConversationIn(ctx context.Context, c *guestclient.Client, dir string, cp wire.Checkpoint) error {
	conv := cp.Conversation
	if conv == nil || conv.Blob == "" || conv.Path == "" {
		return fmt.Errorf("checkpoint #%d holds no conversation", cp.Seq)
	}
	out := tailbuf.Buffer{Max: 8 << 10}
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", conversationScript, "sh", conv.Blob, conv.Path},
		Env: gitsync.SandboxGitEnv, Dir: dir, Stdout: &out, Stderr: &out})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("write %s: exit %d: %s", conv.Path, code, strings.TrimSpace(out.String()))
	}
	return nil
}
