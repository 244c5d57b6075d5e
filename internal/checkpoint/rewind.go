package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/events"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// Rewind puts a session's sandbox's files and the session's conversation back to a
// checkpoint, after recording the state it leaves as a named checkpoint (its undo).
//
// The order keeps a failure from leaving half a rewind: the session's agent is stopped
// (so it writes nothing meanwhile), the undo point taken, the files restored, then the
// conversation, and the agent started again on it. A failure before the files are
// restored leaves everything as it was; a failure restoring the conversation leaves the
// files restored and says so, with the undo. The file step is one script in the
// sandbox: killed in the middle (the daemon killed), it leaves a mark that a rewind run
// again finds, and a rewind to the same checkpoint then finishes the job, keeping the
// first run's undo point.
func (s *Service) Rewind(ctx context.Context, sandboxName, sessionName string, req wire.RewindRequest) (wire.RewindResult, error) {
	var res wire.RewindResult
	sb, err := s.opts.Sandboxes.Record(ctx, sandboxName)
	if err != nil {
		return res, err
	}
	if _, err := s.opts.Store.GetSession(ctx, sb.ID, sessionName); errors.Is(err, store.ErrNotFound) {
		return res, apperr.NotFound(fmt.Sprintf("run `paddock chat %s --list` to see its sessions", sandboxName),
			"sandbox %q has no session named %q", sandboxName, sessionName)
	} else if err != nil {
		return res, err
	}
	all, err := s.opts.Store.ListCheckpoints(ctx, sb.ID, sessionName)
	if err != nil {
		return res, err
	}
	to, err := resolveIn(all, sandboxName, sessionName, req.To)
	if err != nil {
		return res, err
	}
	res.To = to
	c, err := s.opts.Sandboxes.Client(ctx, sandboxName)
	if err != nil {
		return res, err
	}
	// Whether the sandbox still holds what the rewind needs, before anything moves.
	interrupted, err := checkRestorable(ctx, c, to)
	if err != nil {
		return res, err
	}

	running, err := s.opts.Sessions.Stop(ctx, sandboxName, sessionName)
	if err != nil {
		return res, err
	}
	// restart brings the agent back as it was (or on the restored conversation), when
	// it was running; its failure is told with what the rewind did.
	restart := func() error {
		if !running {
			return nil
		}
		if _, err := s.opts.Sessions.Restart(context.WithoutCancel(ctx), sandboxName, sessionName); err != nil {
			return fmt.Errorf("start session %s/%s again: %w (run `paddock restart %s/%s`)", sandboxName, sessionName, err, sandboxName, sessionName)
		}
		return nil
	}

	// A rewind cut off in the middle had stopped the agent: this one brings it back.
	running = running || interrupted != ""
	undo, reused := interruptedUndo(all, to, interrupted)
	if !reused {
		undo, err = s.takeUndo(ctx, sandboxName, sb, sessionName, to)
		if err != nil {
			return res, errors.Join(fmt.Errorf("rewind %s/%s: record the state before it (nothing was changed): %w", sandboxName, sessionName, err), restart())
		}
	}
	res.Undo = undo
	undoHint := fmt.Sprintf("`paddock rewind %s/%s --to %s`", sandboxName, sessionName, undo.Name)

	files, err := s.restoreLocked(ctx, sb.ID, c, to)
	if err != nil {
		return res, errors.Join(fmt.Errorf("rewind %s/%s: put the files back to %s: %w; the conversation was not touched; "+
			"run the rewind again to finish it, or undo what it did with %s", sandboxName, sessionName, describe(to), err, undoHint), restart())
	}
	switch conv := to.Conversation; {
	case conv != nil && conv.Blob != "" && conv.Path != "":
		if err := restoreConversation(ctx, c, to); err != nil {
			return res, errors.Join(fmt.Errorf("rewind %s/%s: the files are back at %s, but the conversation could not be: %w; "+
				"run the rewind again, or undo it with %s", sandboxName, sessionName, describe(to), err, undoHint), restart())
		}
	default:
		res.Note = fmt.Sprintf("%s holds no conversation paddock can put back: the files are back at it, and the agent goes on with its conversation as it is", describe(to))
	}
	res.Files = files
	if err := restart(); err != nil {
		return res, fmt.Errorf("rewind %s/%s to %s is done (undo with %s), but %w", sandboxName, sessionName, describe(to), undoHint, err)
	}
	attrs := map[string]string{"to": fmt.Sprint(to.Seq), "undo": undo.Name}
	if to.Turn > 0 {
		attrs["turn"] = fmt.Sprint(to.Turn)
	}
	if s.opts.Emit != nil {
		s.opts.Emit(ctx, sb, events.Event{Kind: "rewind", Session: sessionName,
			Detail: fmt.Sprintf("rewound to %s; undo: %s", describe(to), undo.Name), Attrs: attrs})
	}
	return res, nil
}

// describe names a checkpoint as a user would: "turn 3", or "#12 (name)".
func describe(cp wire.Checkpoint) string {
	if cp.Kind == wire.CheckpointTurn && cp.Turn > 0 {
		return fmt.Sprintf("turn %d", cp.Turn)
	}
	if cp.Name != "" {
		return fmt.Sprintf("#%d (%s)", cp.Seq, cp.Name)
	}
	return fmt.Sprintf("#%d", cp.Seq)
}

// interruptedUndo is, when a rewind to cp was cut off in the middle (the sandbox
// holds its mark: interrupted is cp's commit), the undo point that rewind took: the
// state before it, which a new undo point (of the half-restored files) would not be.
func interruptedUndo(all []wire.Checkpoint, cp wire.Checkpoint, interrupted string) (wire.Checkpoint, bool) {
	if interrupted == "" || interrupted != cp.Commit {
		return wire.Checkpoint{}, false
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Kind == wire.CheckpointRewind && all[i].RewoundTo == cp.Seq {
			return all[i], true
		}
	}
	return wire.Checkpoint{}, false
}

// restoreLocked is restoreFiles under the sandbox's lock: no checkpoint is taken of
// the files while they are put back.
func (s *Service) restoreLocked(ctx context.Context, sandboxID string, c *guestclient.Client, cp wire.Checkpoint) (int, error) {
	defer s.lock(sandboxID)()
	return restoreFilesIn(ctx, c, inside.Workspace, cp, excludeSpecs(s.opts.Exclude))
}

// excludeSpecs are the pathspecs that leave a checkpoint's configured excludes out.
func excludeSpecs(exclude []string) []string {
	specs := make([]string, 0, len(exclude))
	for _, e := range exclude {
		specs = append(specs, ":(exclude)"+e)
	}
	return specs
}

// checkScript says whether the sandbox's repository still holds a checkpoint's commit
// ($1) and its conversation's blob ($2, may be empty), and prints the mark of a rewind
// cut off in the middle, if there is one: "interrupted COMMIT".
const checkScript = `git cat-file -e "$1^{commit}" 2>/dev/null || exit 3
[ -z "$2" ] || git cat-file -e "$2" 2>/dev/null || exit 4
mark=$(git rev-parse --git-path paddock/rewind)
[ ! -f "$mark" ] || printf 'interrupted %s\n' "$(head -c 100 "$mark")"
exit 0`

// checkRestorable checks that the sandbox holds what restoring cp needs, and returns
// the commit of a rewind that was cut off in the middle ("" when none was).
func checkRestorable(ctx context.Context, c *guestclient.Client, cp wire.Checkpoint) (string, error) {
	blob := ""
	if cp.Conversation != nil {
		blob = cp.Conversation.Blob
	}
	out, stderr, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", checkScript, "sh", cp.Commit, blob},
		Env: gitsync.SandboxGitEnv, Dir: inside.Workspace}, 4096)
	if err != nil {
		return "", err
	}
	switch code {
	case 0:
	case 3, 4:
		what := "its files (commit " + short(cp.Commit) + ")"
		if code == 4 {
			what = "its conversation (blob " + short(blob) + ")"
		}
		return "", apperr.NotFound("see what is left with `paddock checkpoints "+cp.Sandbox+"`",
			"checkpoint #%d is gone from the sandbox's repository: it no longer holds %s; nothing was changed", cp.Seq, what)
	default:
		return "", fmt.Errorf("read the sandbox's repository: exit %d: %s", code, strings.TrimSpace(stderr))
	}
	rest, _ := strings.CutPrefix(strings.TrimSpace(out), "interrupted ")
	return strings.TrimSpace(rest), nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// takeUndo records the state a rewind to cp leaves: a checkpoint of kind rewind, named
// undo-SEQ after its own number, whose RewoundTo is cp's.
func (s *Service) takeUndo(ctx context.Context, sandboxName string, sb store.Sandbox, sessionName string, cp wire.Checkpoint) (wire.Checkpoint, error) {
	seq, err := s.opts.Store.NextCheckpointSeq(ctx, sb.ID)
	if err != nil {
		return wire.Checkpoint{}, err
	}
	undo, err := s.Take(ctx, sandboxName, wire.CheckpointRequest{Session: sessionName, Name: fmt.Sprintf("undo-%d", seq)}, wire.CheckpointRewind)
	if err != nil {
		return undo, err
	}
	undo.RewoundTo = cp.Seq
	return undo, s.opts.Store.PutCheckpoint(ctx, sb.ID, undo)
}

// restoreScript puts the workspace (the current directory) back to a checkpoint's
// files, commit $1, and HEAD and the checked-out branch back to $2 and $3 ($3 empty:
// HEAD detached at $2; $2 empty: a branch with no commit yet); the rest of the
// arguments are the pathspecs a checkpoint leaves out.
//
// An index of its own holds the workspace as it is now (git add -A, as a checkpoint
// stages it: ignored files are not in it, and so never touched), then `git read-tree
// --reset -u` moves it to the checkpoint's tree: files the checkpoint lacks are
// deleted, those that differ written. git writes no file beyond a symbolic link: a
// link that stands where the checkpoint has a directory is removed and the directory
// made, so nothing outside /workspace is written through a link the sandbox planted.
// Then the branch and HEAD, and the agent's own index set to HEAD's tree (git reset
// -q), so that what was uncommitted at the checkpoint shows uncommitted again.
//
// A mark in the repository names the commit while the files move: a script cut off
// leaves it, and the rewind run again sees it (checkScript).
const restoreScript = `set -e
c=$1 head=$2 branch=$3
shift 3
mark=$(git rev-parse --git-path paddock/rewind)
index=$(git rev-parse --git-path paddock/rewind-index)
own=$(git rev-parse --git-path paddock/checkpoint-index)
mkdir -p "$(dirname "$mark")"
printf '%s\n' "$c" > "$mark"
rm -f "$index"
trap 'rm -f "$index"' EXIT
if [ -f "$own" ]; then cp "$own" "$index"; fi
GIT_INDEX_FILE=$index git add -A -- . "$@"
echo "files $(GIT_INDEX_FILE=$index git diff-index --cached --no-renames --name-only "$c" -- | wc -l)"
GIT_INDEX_FILE=$index git read-tree --reset -u "$c^{tree}"
if [ -n "$branch" ]; then
  if [ -n "$head" ]; then git update-ref "refs/heads/$branch" "$head"
  else git update-ref -d "refs/heads/$branch" 2>/dev/null || true; fi
  git symbolic-ref HEAD "refs/heads/$branch"
elif [ -n "$head" ]; then
  git update-ref --no-deref HEAD "$head"
fi
if git rev-parse -q --verify HEAD >/dev/null; then git reset -q; else git read-tree --empty; fi
rm -f "$mark"
`

// restoreFiles puts the workspace of the sandbox c reaches back to checkpoint cp's
// files (and its HEAD and branch), writing only beneath /workspace, without following
// a symbolic link the sandbox made; ignored files stay as they are.
func restoreFiles(ctx context.Context, c *guestclient.Client, cp wire.Checkpoint) error {
	_, err := restoreFilesIn(ctx, c, inside.Workspace, cp, nil)
	return err
}

// restoreFilesIn is restoreFiles of the repository at dir, leaving out the pathspecs
// excludes (as a checkpoint leaves them out), and returns how many files it wrote or
// deleted.
func restoreFilesIn(ctx context.Context, c *guestclient.Client, dir string, cp wire.Checkpoint, excludes []string) (int, error) {
	if cp.Commit == "" {
		return 0, fmt.Errorf("checkpoint #%d has no commit", cp.Seq)
	}
	argv := append([]string{"sh", "-c", restoreScript, "sh", cp.Commit, cp.Head, cp.Branch}, excludes...)
	out, errOut := tailbuf.Buffer{Max: 4 << 10}, tailbuf.Buffer{Max: 8 << 10}
	code, err := c.Exec(ctx, guestclient.ExecOptions{Argv: argv, Env: gitsync.SandboxGitEnv, Dir: dir, Stdout: &out, Stderr: &errOut})
	if err != nil {
		return 0, err
	}
	if code != 0 {
		return 0, fmt.Errorf("exit %d: %s", code, strings.TrimSpace(errOut.String()))
	}
	files := 0
	for line := range strings.SplitSeq(out.String(), "\n") {
		if n, ok := strings.CutPrefix(line, "files "); ok {
			files, _ = strconv.Atoi(strings.TrimSpace(n))
		}
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
