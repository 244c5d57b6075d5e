package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/store"
	"github.com/paddockhq/paddock/internal/tailbuf"
)

// BisectTryTimeout bounds one run of a bisect's check.
const BisectTryTimeout = 10 * time.Minute

// bisectOutputKept is how much of the end of a check's output a step keeps.
const bisectOutputKept = 2048

// bisectDiffMax is where a bisect's diff is cut.
const bisectDiffMax = 60 << 10

// Bisect finds the first turn of a session after which a check fails, running the
// check in a scratch copy of each checkpoint it tries (never in the workspace the
// agent works in), halving the range each time. progress hears each step.
//
// The range is the session's current line of turns (see timeline). The newest turn is
// tried first: when the check passes there, there is nothing to bisect (Note says so).
// Otherwise the turns before the first failing one are taken to pass, as git bisect
// takes them; when even turn 1 fails, FirstBad is turn 1 and Good is nil.
func (s *Service) Bisect(ctx context.Context, sandboxName, sessionName string, req wire.BisectRequest, progress func(string)) (wire.BisectResult, error) {
	if progress == nil {
		progress = func(string) {}
	}
	check := strings.TrimSpace(req.Check)
	if check == "" {
		return wire.BisectResult{}, apperr.Invalid("give the command that passes on good work, e.g. --check 'go test ./...'",
			"bisect needs a check: a shell command that exits 0 on good work")
	}
	sb, err := s.opts.Sandboxes.Record(ctx, sandboxName)
	if err != nil {
		return wire.BisectResult{}, err
	}
	if sessionName == "" {
		return wire.BisectResult{}, apperr.Invalid(fmt.Sprintf("run `paddock chat %s --list` to see its sessions", sandboxName),
			"name the session to bisect: %s/SESSION", sandboxName)
	}
	all, err := s.opts.Store.ListCheckpoints(ctx, sb.ID, sessionName)
	if err != nil {
		return wire.BisectResult{}, err
	}
	line := timeline(all, sessionName)
	if len(line) == 0 {
		if _, err := s.opts.Store.GetSession(ctx, sb.ID, sessionName); errors.Is(err, store.ErrNotFound) {
			return wire.BisectResult{}, apperr.NotFound(fmt.Sprintf("run `paddock chat %s --list` to see its sessions", sandboxName),
				"sandbox %q has no session named %q", sandboxName, sessionName)
		}
		return wire.BisectResult{}, apperr.NotFound(fmt.Sprintf("a checkpoint is taken as each of its agent's turns ends; see them with `paddock checkpoints %s/%s`", sandboxName, sessionName),
			"%s/%s has no checkpoints of its turns yet: nothing to bisect", sandboxName, sessionName)
	}
	c, err := s.opts.Sandboxes.Client(ctx, sandboxName)
	if err != nil {
		return wire.BisectResult{}, err
	}
	sc := &scratch{c: c, workspace: inside.Workspace}
	defer sc.close(ctx)
	try := func(ctx context.Context, cp wire.Checkpoint) (wire.BisectStep, error) {
		st, err := sc.try(ctx, cp, check)
		if err != nil {
			return st, fmt.Errorf("run the check on turn %d (checkpoint #%d): %w", cp.Turn, cp.Seq, err)
		}
		progress(fmt.Sprintf("turn %d: exit %d (%.1fs)", st.Turn, st.Exit, st.Took.Seconds()))
		return st, nil
	}
	if len(line) == 1 {
		progress(fmt.Sprintf("checking turn %d of %s/%s, its only turn", line[0].Turn, sandboxName, sessionName))
	} else {
		progress(fmt.Sprintf("bisecting turns %d to %d of %s/%s (%d checkpoints), the newest first",
			line[0].Turn, line[len(line)-1].Turn, sandboxName, sessionName, len(line)))
	}
	res, err := search(ctx, line, try)
	if err != nil || res.FirstBad == nil {
		return res, err
	}
	from := ""
	if res.Good != nil {
		from = res.Good.Commit
	}
	res.DiffStat, res.Diff, err = turnDiff(ctx, c, inside.Workspace, from, *res.FirstBad)
	if err != nil {
		return res, fmt.Errorf("the diff of turn %d: %w", res.FirstBad.Turn, err)
	}
	return res, nil
}

// timeline is a session's current line of turns, the oldest first: the turns that led
// to the state the session is at now, one checkpoint each, the one taken last on the way
// (a turn whose checkpoints were pruned is missing). It walks back from the session's newest
// checkpoint: a rewind's undo point there means the state is the checkpoint the rewind
// went to, and one met on the way back means the state before the checkpoint after it
// was that rewind's target. So the turns a rewind left behind are off the line, and a
// rewind undone puts them back on. all is the oldest first.
func timeline(all []wire.Checkpoint, session string) []wire.Checkpoint {
	bySeq := make(map[int]int, len(all))
	for i, c := range all {
		bySeq[c.Seq] = i
	}
	// before is the index of the session's checkpoint before all[i], -1 when none.
	before := func(i int) int {
		for i--; i >= 0 && all[i].Session != session; i-- {
		}
		return i
	}
	// stateAfter is the index of the checkpoint whose files the session had just after
	// all[i] was taken: all[i]'s own, or, for a rewind's undo point, its target's.
	stateAfter := func(i int) int {
		if all[i].Kind == wire.CheckpointRewind {
			if j, ok := bySeq[all[i].RewoundTo]; ok && j < i {
				return j
			}
		}
		return i
	}
	var line []wire.Checkpoint
	limit := int(^uint(0) >> 1)
	for i := before(len(all)); i >= 0; {
		i = stateAfter(i)
		if c := all[i]; c.Kind == wire.CheckpointTurn && c.Session == session && c.Turn >= 1 && c.Turn < limit {
			line = append(line, c)
			limit = c.Turn
		}
		i = before(i)
	}
	slices.Reverse(line)
	return line
}

// search is the bisection over line (the oldest first), try running the check on one
// checkpoint: the newest first, then halving the range between the newest turn known to
// pass (none at first) and the oldest known to fail.
func search(ctx context.Context, line []wire.Checkpoint, try func(context.Context, wire.Checkpoint) (wire.BisectStep, error)) (wire.BisectResult, error) {
	res := wire.BisectResult{Steps: []wire.BisectStep{}}
	last := len(line) - 1
	st, err := try(ctx, line[last])
	if err != nil {
		return res, err
	}
	res.Steps = append(res.Steps, st)
	if st.Exit == 0 {
		res.Note = fmt.Sprintf("the check passes at turn %d: nothing to bisect", line[last].Turn)
		return res, nil
	}
	good, bad := -1, last // line[good] passes (-1: none known), line[bad] fails
	for bad-good > 1 {
		mid := good + (bad-good)/2
		st, err := try(ctx, line[mid])
		if err != nil {
			return res, err
		}
		res.Steps = append(res.Steps, st)
		if st.Exit == 0 {
			good = mid
		} else {
			bad = mid
		}
	}
	res.FirstBad = &line[bad]
	if good >= 0 {
		res.Good = &line[good]
	} else {
		res.Note = fmt.Sprintf("the check fails from the first turn (%d)", line[0].Turn)
	}
	return res, nil
}

// scratchScript puts checkpoint $1's files in a directory under /tmp, through an index
// of its own ($dir.index), and prints the directory: the workspace, the agent's index
// and HEAD stay as they are. $2, when set, is the directory the last try used: what the
// check made there is removed, and read-tree --reset -u moves it to $1's files,
// writing the files that differ and those the check changed or removed (as the index's
// stat data tells), and no other. Should that fail, and for the
// first try, a new directory is made and every file written. A failure removes what
// it made.
const scratchScript = `set -e
cd "$PADDOCK_WORKSPACE"
gitdir=$(git rev-parse --absolute-git-dir)
g() { GIT_INDEX_FILE="$dir.index" git --git-dir="$gitdir" --work-tree="$dir" "$@"; }
dir=$2
if [ -n "$dir" ]; then
  case "$dir" in /tmp/paddock-bisect.*) ;; *) exit 2 ;; esac
  if (cd "$dir" && find . -type d ! -perm -u=rwx -exec chmod u+rwx {} + && g clean -ffdxq &&
    g read-tree --reset -u "$1^{tree}") >&2; then
    printf '%s\n' "$dir"
    exit 0
  fi
  chmod -R u+rwx "$dir" 2>/dev/null || true
  rm -rf -- "$dir" "$dir.index"
fi
dir=$(mktemp -d /tmp/paddock-bisect.XXXXXX)
made=
trap '[ -n "$made" ] || rm -rf -- "$dir" "$dir.index"' EXIT
g read-tree "$1^{tree}"
g checkout-index -a -f -u
made=1
printf '%s\n' "$dir"
`

// cleanScript removes a scratch copy and its index, the files a check made read-only
// too.
const cleanScript = `case "$1" in /tmp/paddock-bisect.*) ;; *) exit 2 ;; esac
chmod -R u+rwx "$1" 2>/dev/null || true
rm -rf -- "$1" "$1.index"
`

// scratch is a bisect's copy of a checkpoint's files in the sandbox c reaches (its
// repository at workspace), moved from one checkpoint to the next for each try.
type scratch struct {
	c         *guestclient.Client
	workspace string
	dir       string // empty before the first try
}

// close removes the copy, even when ctx has ended.
func (sc *scratch) close(ctx context.Context) {
	if sc.dir == "" {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	sc.c.Exec(cctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", cleanScript, "sh", sc.dir}, Dir: "/"})
	sc.dir = ""
}

// try runs check in the copy, put at cp's files, and says how it ended. An error is the
// sandbox failing to make the copy or not answering.
func (sc *scratch) try(ctx context.Context, cp wire.Checkpoint, check string) (wire.BisectStep, error) {
	c := sc.c
	st := wire.BisectStep{Turn: cp.Turn, Seq: cp.Seq}
	out, stderr, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", scratchScript, "sh", cp.Commit, sc.dir},
		Env: append([]string{"PADDOCK_WORKSPACE=" + sc.workspace}, gitsync.SandboxGitEnv...), Dir: "/"}, 64<<10)
	if err != nil {
		return st, err
	}
	if code != 0 {
		return st, fmt.Errorf("copy its files to a scratch directory: exit %d: %s", code, strings.TrimSpace(stderr))
	}
	dir := strings.TrimSpace(out)
	sc.dir = dir

	tctx, cancel := context.WithTimeout(ctx, BisectTryTimeout)
	defer cancel()
	buf := &tailbuf.Buffer{Max: bisectOutputKept}
	start := time.Now()
	st.Exit, err = c.Exec(tctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", check}, Dir: dir, Stdout: buf, Stderr: buf})
	st.Took = time.Since(start)
	var startErr *guestclient.ExecStartError
	switch {
	case errors.As(err, &startErr):
		st.Exit = 127
		fmt.Fprintf(buf, "%v\n", err)
	case err != nil && tctx.Err() != nil && ctx.Err() == nil:
		st.Exit = 124
		fmt.Fprintf(buf, "paddock: the check ran longer than %v and was stopped\n", BisectTryTimeout)
	case err != nil:
		return st, err
	}
	st.Output = buf.String()
	return st, nil
}

// diffScript prints the stat and then the patch of what changed from $1 (empty: the
// commit HEAD was at, $3, or else nothing) to $2, the patch cut a little past the
// limit ($4) so that the daemon can say it was cut.
const diffScript = `set -e
cd "$PADDOCK_WORKSPACE"
from=$1
[ -n "$from" ] || from=$3
[ -n "$from" ] || from=$(git hash-object -t tree /dev/null)
git diff --no-color --no-ext-diff --no-textconv --stat=120 --stat-count=200 "$from" "$2" --
printf '\n--patch--\n'
git diff --no-color --no-ext-diff --no-textconv "$from" "$2" -- | head -c "$4"
`

// turnDiff is the stat and the patch (cut at bisectDiffMax) of what changed from the
// commit from (empty: the commit HEAD was at when cp was taken) to checkpoint cp, in the
// repository at workspace.
func turnDiff(ctx context.Context, c *guestclient.Client, workspace, from string, cp wire.Checkpoint) (stat, patch string, err error) {
	out, stderr, code, err := c.Output(ctx, guestclient.ExecOptions{
		Argv: []string{"sh", "-c", diffScript, "sh", from, cp.Commit, cp.Head, fmt.Sprint(bisectDiffMax + 1)},
		Env:  append([]string{"PADDOCK_WORKSPACE=" + workspace}, gitsync.SandboxGitEnv...), Dir: "/"}, 4*bisectDiffMax)
	if err != nil {
		return "", "", err
	}
	if code != 0 {
		return "", "", fmt.Errorf("git diff: exit %d: %s", code, strings.TrimSpace(stderr))
	}
	stat, patch, _ = strings.Cut(out, "\n--patch--\n")
	if len(patch) > bisectDiffMax {
		patch = patch[:strings.LastIndexByte(patch[:bisectDiffMax], '\n')+1] + fmt.Sprintf("[the diff is cut at %d KB]\n", bisectDiffMax>>10)
	}
	return stat, patch, nil
}
