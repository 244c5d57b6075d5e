package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/paddockhq/paddock/internal/api/wire"
	"github.com/paddockhq/paddock/internal/apperr"
	"github.com/paddockhq/paddock/internal/gitsync"
	"github.com/paddockhq/paddock/internal/guestclient"
	"github.com/paddockhq/paddock/internal/inside"
	"github.com/paddockhq/paddock/internal/limitbuf"
	"github.com/paddockhq/paddock/internal/store"
)

// List returns a sandbox's checkpoints, the oldest first: with session, that session's
// (and those of no session). A running sandbox the daemon holds no record of
// checkpoints for (one restored from a snapshot) has them read back from its
// repository first.
func (s *Service) List(ctx context.Context, sandboxName, sessionName string) ([]wire.Checkpoint, error) {
	sb, err := s.opts.Sandboxes.Record(ctx, sandboxName)
	if err != nil {
		return nil, err
	}
	if sessionName != "" {
		if _, err := s.opts.Store.GetSession(ctx, sb.ID, sessionName); errors.Is(err, store.ErrNotFound) {
			return nil, apperr.NotFound(fmt.Sprintf("run `paddock chat %s --list` to see its sessions", sandboxName),
				"sandbox %q has no session named %q", sandboxName, sessionName)
		} else if err != nil {
			return nil, err
		}
	}
	s.readBackOnce(ctx, sb)
	return s.opts.Store.ListCheckpoints(ctx, sb.ID, sessionName)
}

// readBackOnce records, once per sandbox and daemon, the checkpoints a running
// sandbox's repository holds when the daemon has no record of any (a sandbox restored
// from a snapshot, whose repository came with its checkpoints' refs).
func (s *Service) readBackOnce(ctx context.Context, sb store.Sandbox) {
	if sb.State != "running" {
		return
	}
	s.mu.Lock()
	if s.readBack == nil {
		s.readBack = map[string]bool{}
	}
	done := s.readBack[sb.ID]
	s.readBack[sb.ID] = true
	s.mu.Unlock()
	if done {
		return
	}
	defer s.lock(sb.ID)()
	have, err := s.opts.Store.ListCheckpoints(ctx, sb.ID, "")
	if err != nil || len(have) > 0 {
		return
	}
	c, err := s.opts.Sandboxes.Client(ctx, sb.Name)
	if err != nil {
		return
	}
	cps, err := readBack(ctx, c, sb.Name)
	if err != nil {
		s.log.Warn("read back a sandbox's checkpoints", "sandbox", sb.Name, "err", err)
		return
	}
	for _, cp := range cps {
		if err := s.opts.Store.AddCheckpoint(ctx, sb.ID, cp); err != nil {
			s.log.Warn("record a checkpoint read back", "sandbox", sb.Name, "seq", cp.Seq, "err", err)
		}
	}
}

// readBack reads the checkpoints a sandbox's repository holds from their commits'
// messages, the oldest first.
func readBack(ctx context.Context, c *guestclient.Client, sandboxName string) ([]wire.Checkpoint, error) {
	out, stderr, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", readBackScript},
		Env: gitsync.SandboxGitEnv, Dir: inside.Workspace}, 64<<20)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr))
	}
	var cps []wire.Checkpoint
	for line := range strings.SplitSeq(out, "\n") {
		commit, msg, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		var cp wire.Checkpoint
		if json.Unmarshal([]byte(msg), &cp) != nil || cp.Seq < 1 {
			continue
		}
		cp.Commit, cp.Sandbox = commit, sandboxName
		cps = append(cps, cp)
	}
	sortBySeq(cps)
	return cps, nil
}

func sortBySeq(cps []wire.Checkpoint) {
	for i := 1; i < len(cps); i++ {
		for j := i; j > 0 && cps[j].Seq < cps[j-1].Seq; j-- {
			cps[j], cps[j-1] = cps[j-1], cps[j]
		}
	}
}

// turnDiffScript prints what changed from tree $1 to tree $2 as git diff does ($3 = 1:
// --stat), with no colour, no external diff driver and no textconv the sandbox set up.
const turnDiffScript = `stat=
[ "$3" = 1 ] && stat=--stat
exec git -c color.ui=false -c diff.external= diff --no-ext-diff --no-textconv --no-color $stat "$1" "$2" --`

// maxDiff bounds a diff's text.
const maxDiff = 8 << 20

// Diff is what changed between two checkpoints of a sandbox (from, to as Resolve takes
// them; from empty: the checkpoint before to), as git diff prints it.
func (s *Service) Diff(ctx context.Context, sandboxName, sessionName, from, to string, stat bool) (string, error) {
	sb, err := s.opts.Sandboxes.Record(ctx, sandboxName)
	if err != nil {
		return "", err
	}
	s.readBackOnce(ctx, sb)
	all, err := s.opts.Store.ListCheckpoints(ctx, sb.ID, sessionName)
	if err != nil {
		return "", err
	}
	if to == "" {
		return "", apperr.Invalid("say which: `paddock diff SANDBOX --turn N`", "name the checkpoint whose changes to show")
	}
	toCp, err := resolveIn(all, sandboxName, sessionName, to)
	if err != nil {
		return "", err
	}
	if sessionName != "" {
		// The state before a turn is the last checkpoint's, whichever session's.
		if all, err = s.opts.Store.ListCheckpoints(ctx, sb.ID, ""); err != nil {
			return "", err
		}
	}
	var fromTree string
	if from != "" {
		fromCp, err := resolveIn(all, sandboxName, sessionName, from)
		if err != nil {
			return "", err
		}
		fromTree = treeOf(fromCp)
	} else {
		fromTree = before(all, toCp)
	}
	c, err := s.opts.Sandboxes.Client(ctx, sandboxName)
	if err != nil {
		return "", err
	}
	flag := "0"
	if stat {
		flag = "1"
	}
	out, stderr, code, err := c.Output(ctx, guestclient.ExecOptions{Argv: []string{"sh", "-c", turnDiffScript, "sh", fromTree, treeOf(toCp), flag},
		Env: gitsync.SandboxGitEnv, Dir: inside.Workspace}, maxDiff)
	var tooLarge *limitbuf.TooLargeError
	if errors.As(err, &tooLarge) {
		return "", apperr.Invalid("see which files changed with --stat", "the diff is larger than %d MiB", maxDiff>>20)
	}
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", apperr.NotFound(fmt.Sprintf("see what is left with `paddock checkpoints %s`", sandboxName),
			"the sandbox's repository no longer holds checkpoint #%d: %s", toCp.Seq, strings.TrimSpace(stderr))
	}
	return out, nil
}

// treeOf is the tree of a checkpoint's files.
func treeOf(cp wire.Checkpoint) string {
	if cp.Tree != "" {
		return cp.Tree
	}
	return cp.Commit + "^{tree}"
}

// emptyTree is git's tree of nothing.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// before is the tree a checkpoint's changes are counted from: the workspace as the
// checkpoint before it (of any session) left it, else the commit HEAD was at, else
// nothing. all holds every checkpoint of the sandbox, the oldest first.
func before(all []wire.Checkpoint, cp wire.Checkpoint) string {
	if tree, ok := stateBefore(all, cp.Seq); ok {
		return tree
	}
	if cp.Head != "" {
		return cp.Head + "^{tree}"
	}
	return emptyTree
}

// stateBefore is the tree of the workspace as the newest checkpoint before number seq
// left it: its own, or, for a rewind's undo point (the state the rewind left behind),
// the tree of the checkpoint the rewind went to. ok is false when none came before.
func stateBefore(all []wire.Checkpoint, seq int) (tree string, ok bool) {
	for i := len(all) - 1; i >= 0; i-- {
		c := all[i]
		if c.Seq >= seq {
			continue
		}
		if c.Kind == wire.CheckpointRewind && c.RewoundTo > 0 {
			for _, to := range all {
				if to.Seq == c.RewoundTo {
					return treeOf(to), true
				}
			}
		}
		return treeOf(c), true
	}
	return "", false
}
